"""The evaluations API's routes (SimpleRouter: config/api.py mounts several apps at /api/)."""

from rest_framework.routers import SimpleRouter

from evaluator.api import views

router = SimpleRouter()
router.register("evaluations", views.EvaluationViewSet, basename="api-evaluation")

urlpatterns: list = [*router.urls]
from evaluator.api.audit import urlpatterns as audit_urlpatterns  # noqa: E402  (audit endpoints, owned by the audit)

urlpatterns += audit_urlpatterns
