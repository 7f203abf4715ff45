"""The REST API: its root (the list of endpoints), every app's API urls under /api/, plus the OpenAPI schema and its
offline docs page."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.api_root import ApiRootView

urlpatterns = [
    path("", ApiRootView.as_view(), name="api-root"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file of its own: no inline script for the CSP to allow.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("leaderboard.api.urls")),
    path("", include("evaluator.api.urls")),
]
