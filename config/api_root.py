"""GET /api/: the API's entry point, listing its endpoints (JSON for clients, DRF's browsable page for browsers)."""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

# (key, URL name, what it is): list endpoints of every app's router, the board, the schema and its docs.
ENDPOINTS = [
    ("leaderboard", "leaderboard-api", "ranked rows of one board: ?hardware=&problem_set=&level=&sort="),
    ("leaderboard_csv", "leaderboard-csv", "the same rows as CSV"),
    ("llms", "api-llm-list", "LLMs, their owners and counts"),
    ("problems", "api-problem-list", "problems of every set"),
    ("kernels", "api-kernel-list", "uploaded kernels"),
    ("submissions", "api-submission-list", "uploads: POST a bundle here (token), GET one for its progress"),
    ("evaluations", "api-evaluation-list", "evaluations with their verdicts and timings"),
    (
        "budget",
        "api-budget-list",
        "your compute budget (token): each limit, its use over the last 24 hours, when it frees",
    ),
    (
        "webhook",
        "api-webhook",
        "your account's webhook (token): GET it, PUT a URL, DELETE it; called when a submission ends",
    ),
    ("schema", "api-schema", "OpenAPI 3 schema"),
    ("docs", "api-docs", "interactive documentation"),
]


class ApiRootView(APIView):
    """The endpoints of this API, each with its absolute URL and a line on what it holds."""

    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        urls, about = {}, {}
        for key, name, text in ENDPOINTS:
            try:
                urls[key] = request.build_absolute_uri(reverse(name))
            except NoReverseMatch:  # an app that is not installed here
                continue
            about[key] = text
        return Response({**urls, "about": about})  # DefaultRouter's shape (name -> URL), and a line on each
