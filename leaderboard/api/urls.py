"""The catalogue API's routes. A SimpleRouter (no root view): config/api.py mounts several apps at /api/."""

from django.urls import include, path
from rest_framework.renderers import JSONRenderer
from rest_framework.routers import SimpleRouter

from leaderboard.api import views
from leaderboard.api.renderers import CSVRenderer

router = SimpleRouter()
router.register("llms", views.LLMViewSet, basename="api-llm")
router.register("problems", views.ProblemViewSet, basename="api-problem")
router.register("kernels", views.KernelViewSet, basename="api-kernel")
router.register("submissions", views.SubmissionViewSet, basename="api-submission")
router.register("budget", views.BudgetViewSet, basename="api-budget")

results_csv = views.SubmissionViewSet.as_view(
    {"get": "results_csv"}, detail=True, basename="api-submission", renderer_classes=[CSVRenderer, JSONRenderer]
)

urlpatterns: list = [
    path("submissions/<int:pk>/results.csv", results_csv, name="api-submission-results-csv"),
    path("", include("leaderboard.api.ranking")),
    *router.urls,
]
