"""Evaluations read API, plus the staff re-run of one evaluation; the audit API.

GET  /api/kernels/<id>/flags/        flags of a kernel + whether LLM judges are configured (public)
POST /api/kernels/<id>/flags/        import one judge result for the kernel (staff)
POST /api/kernels/<id>/audit/        re-run the static layer now and/or queue LLM judges (staff)
POST /api/flags/<id>/review/         confirm / dismiss / legitimate / reopen, with a note (staff)
POST /api/audit/import/              import a hack_flags.json document for one LLM (staff)
GET  /api/audit/status/              judge configuration status (public)
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from catalogue.models import Kernel
from evaluator.api import filters, serializers
from evaluator.audit.config import judge_status
from evaluator.models import AuditFlag, Evaluation
from evaluator.selectors.audit import kernel_flags
from evaluator.services import audit as svc
from evaluator.services.reruns import evaluation_rerun


class EvaluationViewSet(viewsets.ReadOnlyModelViewSet):
    """Harness runs of kernels. The detail view carries the full result record and per-distribution verdicts."""

    filterset_class = filters.EvaluationFilter

    def get_queryset(self) -> QuerySet[Evaluation]:
        qs = Evaluation.objects.select_related("kernel", "seed_commitment", "re_evaluation")
        if self.action == "retrieve":
            qs = qs.prefetch_related("distributions")
        return qs

    def get_serializer_class(self) -> type:
        if self.action in {"retrieve", "rerun"}:
            return serializers.EvaluationDetailSerializer
        return serializers.EvaluationSerializer

    @extend_schema(
        summary="Re-run one evaluation (staff)", request=None, responses={202: serializers.EvaluationSerializer}
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def rerun(self, request: Request, pk: str | None = None) -> Response:
        new = evaluation_rerun(evaluation_id=self.get_object().pk)
        return Response(serializers.EvaluationSerializer(new).data, status=status.HTTP_202_ACCEPTED)


class KernelAuditViewSet(viewsets.GenericViewSet):
    """A kernel's audit flags (GET, public), import of one judge result for it and an audit on demand (staff)."""

    queryset = Kernel.objects.all()  # the type of {id} in the schema; the actions read what they need
    lookup_value_regex = r"[0-9]+"

    def get_permissions(self) -> list:
        return [AllowAny()] if self.request.method == "GET" else [IsAdminUser()]

    @extend_schema(
        methods=["GET"], summary="Audit flags of a kernel", responses={200: serializers.KernelFlagsSerializer}
    )
    @extend_schema(
        methods=["POST"],
        summary="Import a judge result for a kernel (staff)",
        request=serializers.JudgeResultInputSerializer,
        responses={201: serializers.AuditFlagSerializer},
    )
    @action(detail=True, methods=["get", "post"])
    def flags(self, request: Request, pk: str | None = None) -> Response:
        kernel = get_object_or_404(Kernel, pk=pk)
        if request.method == "GET":
            payload = {
                "kernel": kernel.pk,
                "judges": judge_status().to_dict(),
                "flags": kernel_flags(kernel_id=kernel.pk),
            }
            return Response(serializers.KernelFlagsSerializer(payload).data)
        data = serializers.JudgeResultInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        record = dict(data.validated_data)
        judge = record.pop("judge")
        try:
            flag = svc.judge_result_import(
                kernel_id=kernel.pk, source_name=f"import:{judge}", record=record, origin="api"
            )
        except ValueError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(serializers.AuditFlagSerializer(flag).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Audit a kernel on demand (staff)",
        request=serializers.AuditRequestSerializer,
        responses={202: serializers.AuditStartedSerializer},
    )
    @action(detail=True, methods=["post"])
    def audit(self, request: Request, pk: str | None = None) -> Response:
        kernel = get_object_or_404(Kernel, pk=pk)
        data = serializers.AuditRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        opts = data.validated_data
        outcome = svc.kernel_audit_request(
            kernel_id=kernel.pk,
            static=opts["static"],
            judges=opts["judges"],
            judge_name=opts["judge"] or None,
            force=opts["force"],
        )
        if outcome.config_error:
            return Response({"detail": outcome.config_error}, status=status.HTTP_400_BAD_REQUEST)
        if outcome.no_judges:
            return Response(
                {"detail": outcome.no_judges, "static_flags": outcome.static_flags}, status=status.HTTP_409_CONFLICT
            )
        body = {"static_flags": outcome.static_flags, "judges_queued": outcome.judges_queued}
        return Response(body, status=status.HTTP_202_ACCEPTED)


class FlagViewSet(viewsets.GenericViewSet):
    """A staff decision on one flag."""

    queryset = AuditFlag.objects.all()
    lookup_value_regex = r"[0-9]+"
    permission_classes = [IsAdminUser]

    @extend_schema(
        summary="Review an audit flag (staff)",
        request=serializers.ReviewInputSerializer,
        responses={200: serializers.AuditFlagSerializer},
    )
    @action(detail=True, methods=["post"])
    def review(self, request: Request, pk: str | None = None) -> Response:
        flag = get_object_or_404(AuditFlag, pk=pk)
        data = serializers.ReviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            flag = svc.flag_review(flag_id=flag.pk, user=request.user, **data.validated_data)
        except svc.ReviewError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(serializers.AuditFlagSerializer(flag).data)


class AuditViewSet(viewsets.ViewSet):
    """Judge configuration status (public) and the import of a hack_flags.json document (staff)."""

    def get_permissions(self) -> list:
        return [AllowAny()] if self.action == "status" else [IsAdminUser()]

    @extend_schema(summary="LLM judge status", responses={200: serializers.JudgeStatusSerializer})
    @action(detail=False, methods=["get"])
    def status(self, request: Request) -> Response:
        return Response(serializers.JudgeStatusSerializer(judge_status().to_dict()).data)

    @extend_schema(
        summary="Import judge results for an LLM (staff)",
        request=serializers.HackFlagsImportSerializer,
        responses={200: serializers.ImportReportSerializer},
    )
    @action(detail=False, methods=["post"], url_path="import", url_name="import")
    def import_flags(self, request: Request) -> Response:
        """Same shapes as `manage.py import_hack_flags`."""
        data = serializers.HackFlagsImportSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        opts = data.validated_data
        report = svc.hack_flags_import(
            data=opts["data"], llm_name=opts["llm"], submission_id=opts["submission"], judge_name=opts["judge"]
        )
        return Response(report.to_dict())
