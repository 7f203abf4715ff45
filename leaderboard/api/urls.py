"""The catalogue API's routes. A SimpleRouter (no root view): config/api.py mounts several apps at /api/."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from leaderboard.api import views

router = SimpleRouter()
router.register("llms", views.LLMViewSet, basename="api-llm")
router.register("problems", views.ProblemViewSet, basename="api-problem")
router.register("kernels", views.KernelViewSet, basename="api-kernel")
router.register("submissions", views.SubmissionViewSet, basename="api-submission")

urlpatterns: list = [
    path("", include("leaderboard.api.ranking")),
    *router.urls,
]
