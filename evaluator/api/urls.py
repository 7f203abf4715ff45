"""The evaluations and audit API's routes (SimpleRouter: config/api.py mounts several apps at /api/)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from evaluator.api import views
from evaluator.api.webhook import WebhookApi

router = SimpleRouter()
router.register("evaluations", views.EvaluationViewSet, basename="api-evaluation")
# Route names stay those of before: api-kernel-flags, api-kernel-audit, api-flag-review, api-audit-import/-status.
router.register("kernels", views.KernelAuditViewSet, basename="api-kernel")
router.register("flags", views.FlagViewSet, basename="api-flag")
router.register("audit", views.AuditViewSet, basename="api-audit")

urlpatterns: list = [*router.urls, path("webhook/", WebhookApi.as_view(), name="api-webhook")]
