"""Evaluations read API, plus the staff re-run of one evaluation."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from evaluator.api import filters, serializers
from evaluator.models import Evaluation
from evaluator.services.evaluations import evaluation_rerun


class EvaluationViewSet(viewsets.ReadOnlyModelViewSet):
    """Harness runs of kernels. The detail view carries the full result record and per-distribution verdicts."""

    filterset_class = filters.EvaluationFilter

    def get_queryset(self) -> QuerySet[Evaluation]:
        qs = Evaluation.objects.select_related("kernel")
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
