"""Audit API: a kernel's flags, judge-result import, on-demand audits and staff review.

GET  /api/kernels/<id>/flags/        flags of a kernel + whether LLM judges are configured (public)
POST /api/kernels/<id>/flags/        import one judge result for the kernel (staff)
POST /api/kernels/<id>/audit/        re-run the static layer now and/or queue LLM judges (staff)
POST /api/flags/<id>/review/         confirm / dismiss / legitimate / reopen, with a note (staff)
POST /api/audit/import/              import a hack_flags.json document for one LLM (staff)
GET  /api/audit/status/              judge configuration status (public)
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny, IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue.models import Kernel
from evaluator.audit.config import judge_status
from evaluator.audit.judges import JudgeConfigError
from evaluator.models import AuditFlag
from evaluator.services import audit as svc


class AuditFlagSerializer(serializers.ModelSerializer):
    reviewed_by = serializers.CharField(source="reviewed_by.username", default=None, read_only=True)
    status = serializers.SerializerMethodField()

    class Meta:
        model = AuditFlag
        fields = [
            "id", "kernel", "source", "source_name", "verdict", "severity", "classes", "evidence", "rationale",
            "confidence", "review_state", "reviewed_by", "reviewed_at", "review_note", "created_at", "status",
        ]  # fmt: skip
        read_only_fields = fields

    def get_status(self, flag: AuditFlag) -> str:
        """ "ok" for a verdict; "audit_error" when a judge was asked but gave none (timeout, invalid answer)."""
        raw = flag.raw if isinstance(flag.raw, dict) else {}
        return str(raw.get("status") or "ok")


class EvidenceSerializer(serializers.Serializer):
    lines = serializers.CharField(required=False, allow_blank=True, default="")
    quote = serializers.CharField(required=False, allow_blank=True, default="")
    why = serializers.CharField(required=False, allow_blank=True, default="")


class JudgeResultInputSerializer(serializers.Serializer):
    judge = serializers.CharField(max_length=150, help_text="Name of the judge that produced the result.")
    verdict = serializers.CharField(max_length=30, help_text="clean | suspicious | hack")
    classes = serializers.ListField(child=serializers.CharField(max_length=10), required=False, default=list)
    evidence = EvidenceSerializer(many=True, required=False, default=list)
    rationale = serializers.CharField(required=False, allow_blank=True, default="")
    failing_input = serializers.CharField(required=False, allow_blank=True, default="")
    legit_specializations = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1, allow_null=True, default=None)


class ReviewInputSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=sorted(svc.REVIEW_ACTIONS))
    note = serializers.CharField(max_length=5000)


class AuditRequestSerializer(serializers.Serializer):
    static = serializers.BooleanField(default=True, help_text="Re-run the static layer now.")
    judge = serializers.CharField(required=False, allow_blank=True, default="", help_text="Judge name; '' = all.")
    judges = serializers.BooleanField(default=False, help_text="Queue the LLM judge(s).")
    force = serializers.BooleanField(default=False, help_text="Ask judges again even if they already answered.")


class HackFlagsImportSerializer(serializers.Serializer):
    llm = serializers.CharField(max_length=200)
    submission = serializers.IntegerField(required=False, allow_null=True, default=None)
    judge = serializers.CharField(max_length=150, required=False, default="api")
    data = serializers.JSONField(help_text="A hack_flags.json document: list, {flags: [...]}, or key -> record.")


def _flags_payload(kernel: Kernel) -> dict[str, Any]:
    flags = AuditFlag.objects.filter(kernel=kernel).select_related("reviewed_by").order_by("-created_at")
    return {
        "kernel": kernel.pk,
        "judges": judge_status().to_dict(),
        "flags": AuditFlagSerializer(flags, many=True).data,
    }


class KernelFlagsApi(APIView):
    """A kernel's audit flags (GET, public) and import of one judge result for it (POST, staff)."""

    def get_permissions(self) -> list:
        return [AllowAny()] if self.request.method == "GET" else [IsAdminUser()]

    @extend_schema(summary="Audit flags of a kernel", responses={200: AuditFlagSerializer(many=True)})
    def get(self, request: Request, kernel_id: int) -> Response:
        return Response(_flags_payload(get_object_or_404(Kernel, pk=kernel_id)))

    @extend_schema(summary="Import a judge result for a kernel (staff)", request=JudgeResultInputSerializer,
                   responses={201: AuditFlagSerializer})  # fmt: skip
    def post(self, request: Request, kernel_id: int) -> Response:
        kernel = get_object_or_404(Kernel, pk=kernel_id)
        data = JudgeResultInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        record = dict(data.validated_data)
        judge = record.pop("judge")
        try:
            flag = svc.judge_result_import(kernel_id=kernel.pk, source_name=f"import:{judge}", record=record,
                                           origin="api")  # fmt: skip
        except ValueError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(AuditFlagSerializer(flag).data, status=status.HTTP_201_CREATED)


class KernelAuditApi(APIView):
    """Run the audit on demand (staff): static rules now, LLM judges queued."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        summary="Audit a kernel on demand (staff)",
        request=AuditRequestSerializer,
        responses={
            202: inline_serializer(
                "AuditStarted", {"static_flags": serializers.IntegerField(), "judges_queued": serializers.ListField()}
            )
        },
    )
    def post(self, request: Request, kernel_id: int) -> Response:  # fmt: skip
        kernel = get_object_or_404(Kernel, pk=kernel_id)
        data = AuditRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        opts = data.validated_data
        static_flags = len(svc.kernel_audit_static(kernel_id=kernel.pk)) if opts["static"] else 0
        queued: list[str] = []
        if opts["judges"] or opts["judge"]:
            try:
                queued = svc.judges_enqueue(kernel_id=kernel.pk, judge_name=opts["judge"] or None, force=opts["force"])
            except JudgeConfigError as exc:
                return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
            if not queued:
                return Response({"detail": judge_status().message, "static_flags": static_flags},
                                status=status.HTTP_409_CONFLICT)  # fmt: skip
        return Response({"static_flags": static_flags, "judges_queued": queued}, status=status.HTTP_202_ACCEPTED)


class FlagReviewApi(APIView):
    """A staff decision on one flag."""

    permission_classes = [IsAdminUser]

    @extend_schema(summary="Review an audit flag (staff)", request=ReviewInputSerializer,
                   responses={200: AuditFlagSerializer})  # fmt: skip
    def post(self, request: Request, flag_id: int) -> Response:
        get_object_or_404(AuditFlag, pk=flag_id)
        data = ReviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            flag = svc.flag_review(flag_id=flag_id, user=request.user, **data.validated_data)
        except svc.ReviewError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(AuditFlagSerializer(flag).data)


class HackFlagsImportApi(APIView):
    """Import a hack_flags.json document (same shapes as `manage.py import_hack_flags`)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        summary="Import judge results for an LLM (staff)",
        request=HackFlagsImportSerializer,
        responses={
            200: inline_serializer(
                "ImportReport",
                {
                    "created": serializers.ListField(),
                    "skipped": serializers.ListField(),
                    "errors": serializers.ListField(),
                },
            )
        },
    )
    def post(self, request: Request) -> Response:  # fmt: skip
        data = HackFlagsImportSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        opts = data.validated_data
        report = svc.hack_flags_import(data=opts["data"], llm_name=opts["llm"], submission_id=opts["submission"],
                                       judge_name=opts["judge"])  # fmt: skip
        return Response(report.to_dict())


class AuditStatusApi(APIView):
    """Whether LLM judges are configured (the audit works without them, with static rules and runtime signals)."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="LLM judge status",
        responses={
            200: inline_serializer(
                "JudgeStatus",
                {
                    "configured": serializers.BooleanField(),
                    "judges": serializers.ListField(),
                    "message": serializers.CharField(),
                },
            )
        },
    )
    def get(self, request: Request) -> Response:  # fmt: skip
        return Response(judge_status().to_dict())


urlpatterns = [
    path("kernels/<int:kernel_id>/flags/", KernelFlagsApi.as_view(), name="api-kernel-flags"),
    path("kernels/<int:kernel_id>/audit/", KernelAuditApi.as_view(), name="api-kernel-audit"),
    path("flags/<int:flag_id>/review/", FlagReviewApi.as_view(), name="api-flag-review"),
    path("audit/import/", HackFlagsImportApi.as_view(), name="api-audit-import"),
    path("audit/status/", AuditStatusApi.as_view(), name="api-audit-status"),
]
