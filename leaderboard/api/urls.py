from django.urls import include, path  # noqa: F401

urlpatterns: list = [
    path("", include("leaderboard.api.ranking")),
]
