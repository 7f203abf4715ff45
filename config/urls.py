"""Root URLs. Each app owns its own urls module; the REST API is assembled in config/api.py."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("config.api")),
    path("kernels/", include("inspector.urls")),
    path("audit/", include("evaluator.urls")),
    path("", include("leaderboard.urls")),
]
