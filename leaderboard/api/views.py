"""Catalogue API: LLMs, problems, kernels and submissions (upload, progress, CSV, staff re-run). Thin ViewSets."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalogue.models import LLM, Kernel, Problem, Submission
from evaluator.selectors.seeds import submission_digests
from evaluator.services.reruns import submission_rerun
from leaderboard.api import filters, serializers
from leaderboard.api.parsers import UntrustedJSONParser
from leaderboard.api.throttles import SubmissionRateThrottle
from leaderboard.bundles import BundleError
from leaderboard.selectors.budget import budget_overview
from leaderboard.selectors.submissions import submission_list, submission_results_csv
from leaderboard.services.llms import LLMOwnershipError, llm_transfer
from leaderboard.services.submissions import UPLOAD_FIELDS, BudgetExceeded, submission_create_from_upload


class LLMViewSet(viewsets.ReadOnlyModelViewSet):
    """LLMs whose kernels are evaluated, with their owners (who may upload under them)."""

    queryset = LLM.objects.select_related("owner", "owner_group")
    serializer_class = serializers.LLMSerializer
    filterset_class = filters.LLMFilter

    @extend_schema(
        summary="Transfer an LLM to another owner and/or group (staff)",
        request=serializers.LLMTransferSerializer,
        responses={200: serializers.LLMSerializer},
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def transfer(self, request: Request, pk: str | None = None) -> Response:
        llm = self.get_object()
        form = serializers.LLMTransferSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        llm = llm_transfer(llm=llm, **form.validated_data)
        return Response(serializers.LLMSerializer(llm, context={"request": request}).data)


class ProblemViewSet(viewsets.ReadOnlyModelViewSet):
    """KernelBench problems (every imported source; `is_latest` marks the current one per id)."""

    queryset = Problem.objects.all()
    filterset_class = filters.ProblemFilter

    def get_serializer_class(self) -> type:
        return serializers.ProblemDetailSerializer if self.action == "retrieve" else serializers.ProblemSerializer


class KernelViewSet(viewsets.ReadOnlyModelViewSet):
    """Submitted kernels (ModelNew sources)."""

    queryset = Kernel.objects.select_related("llm", "problem")
    filterset_class = filters.KernelFilter

    def get_serializer_class(self) -> type:
        return serializers.KernelDetailSerializer if self.action == "retrieve" else serializers.KernelSerializer


@extend_schema_view(
    list=extend_schema(summary="List submissions"),
    retrieve=extend_schema(summary="A submission with its progress and per-file report"),
)
class SubmissionViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Kernel bundles and their evaluation progress. Anyone can read; uploading needs a token (or a session)."""

    filterset_class = filters.SubmissionFilter
    parser_classes = [MultiPartParser, FormParser, UntrustedJSONParser]

    def get_queryset(self) -> QuerySet[Submission]:
        return submission_list()

    def get_serializer_class(self) -> type:
        if self.action == "create":
            return serializers.SubmissionCreateSerializer
        if self.action == "retrieve":
            return serializers.SubmissionDetailSerializer
        return serializers.SubmissionSerializer

    def get_throttles(self) -> list[Any]:
        throttles = super().get_throttles()
        if self.action == "create":
            throttles.append(SubmissionRateThrottle())
        return throttles

    @extend_schema(
        summary="Upload a kernel bundle",
        request={"multipart/form-data": serializers.SubmissionCreateSerializer},
        responses={
            202: serializers.SubmissionCreatedSerializer,
            200: OpenApiResponse(serializers.SubmissionCreatedSerializer, description="Duplicate: the earlier one"),
            403: OpenApiResponse(description="The LLM belongs to someone else"),
            400: OpenApiResponse(serializers.BundleRejectedSerializer, description="Rejected; nothing stored"),
            429: OpenApiResponse(
                serializers.BudgetRefusedSerializer, description="Over a compute budget; nothing stored or queued"
            ),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = serializers.SubmissionCreateSerializer(data=request.data)
        if not form.is_valid():
            # Same shape as a rejected bundle, so clients handle one kind of 400.
            detail = "; ".join(f"{field}: {' '.join(map(str, msgs))}" for field, msgs in form.errors.items())
            return Response({"detail": detail, "report": [], "errors": form.errors}, status=status.HTTP_400_BAD_REQUEST)
        fields = {name: form.validated_data[name] for name in UPLOAD_FIELDS}
        try:
            submission = submission_create_from_upload(uploader=request.user, **fields)
        except BudgetExceeded as exc:  # 429: the limit, whose it is, and when it resets
            refusal = exc.refusal
            body: dict[str, Any] = {"detail": exc.message, "report": exc.report}
            body |= {"limit": refusal.limit, "subject": refusal.subject}
            body["resets_at"] = refusal.resets_at.isoformat() if refusal.resets_at else None
            return Response(body, status=exc.status, headers={"Retry-After": str(refusal.retry_after)})
        except BundleError as exc:  # 400, or 413 for a bundle over BUNDLE_MAX_BYTES
            return Response({"detail": exc.message, "report": exc.report}, status=exc.status)
        except LLMOwnershipError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        out = serializers.SubmissionSerializer(submission, context={"request": request}).data
        body = {key: out[key] for key in ("id", "url", "page_url", "status", "kernel_count", "problem_set", "hardware")}
        body["report"] = submission.report
        body["duplicate"] = submission.duplicate
        # Each evaluation's seed commitment, published now, before any kernel runs (README: how a reader checks).
        body["evaluations"] = submission_digests(submission_id=submission.pk)
        if submission.duplicate:
            return Response(body, status=status.HTTP_200_OK, headers={"Location": out["url"]})
        if getattr(submission, "evaluation_pending", False):
            body["note"] = "Stored; the evaluation queue is unreachable, so evaluation will start when it is back."
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": out["url"]})

    @extend_schema(summary="Results of a submission as CSV", responses={(200, "text/csv"): OpenApiTypes.STR})
    # Routed explicitly in urls.py (the router would append a slash after ".csv").
    def results_csv(self, request: Request, pk: str | None = None) -> Response:
        submission = self.get_object()
        return Response(
            submission_results_csv(submission=submission),
            content_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="submission-{submission.pk}-results.csv"'},
        )

    @extend_schema(
        summary="Re-run every kernel of a submission (staff)",
        request=None,
        responses={202: serializers.RerunResultSerializer},
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def rerun(self, request: Request, pk: str | None = None) -> Response:
        submission = self.get_object()
        evaluations = submission_rerun(submission_id=submission.pk)
        return Response({"evaluation_ids": [ev.pk for ev in evaluations]}, status=status.HTTP_202_ACCEPTED)


class BudgetViewSet(viewsets.ViewSet):
    """Your compute budget: per account and per LLM you may upload under, each limit with its use over the last
    24 hours and when the oldest of that use leaves the window."""

    permission_classes = [IsAuthenticated]

    @extend_schema(summary="Your compute budget (account and LLMs)", responses={200: serializers.BudgetSerializer})
    def list(self, request: Request) -> Response:
        return Response(budget_overview(user=request.user))
