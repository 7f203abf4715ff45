"""GET /api/leaderboard/ (JSON) and GET /api/leaderboard.csv: the ranked rows the leaderboard page shows."""

from __future__ import annotations

import csv

from django.http import HttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.board_request import board_request
from leaderboard.selectors.ranking import FAST_P, LEVELS, SORT_KEYS, leaderboard_rows, p_label
from leaderboard.untrusted import spreadsheet_cell

PARAMETERS = [
    OpenApiParameter("level", OpenApiTypes.INT, enum=list(LEVELS), description="1, 2 or 3; omitted: overall"),
    OpenApiParameter("hardware", OpenApiTypes.STR, description="Hardware label; omitted: the default one"),
    OpenApiParameter("problem_set", OpenApiTypes.STR, description="Problem-set version; omitted: the default one"),
    OpenApiParameter("sort", OpenApiTypes.STR, description=f"One of {', '.join(SORT_KEYS)}; prefix '-' = descending"),
    OpenApiParameter(
        "stack",
        OpenApiTypes.STR,
        description="Only verdicts measured on this software stack, e.g. 'torch 2.13.0 / CUDA 13.0 / GPU NVIDIA H200' "
        "(a kernel's evaluations list theirs: /api/evaluations/?kernel=ID); omitted: every stack",
    ),
]
CSV_FIELDS = [
    "rank",
    "kind",
    "name",
    "level",
    "problems",
    "attempted",
    "coverage_pct",
    "correct",
    "correctness_pct",
    "speedup",
    *(f"fast_{p_label(p)}_pct" for p in FAST_P),
    "memory_efficiency",
    "mem_efficient_pct",
    "mem_increased_pct",
    "kernels",
    "standard_speedup",
    "inflation",
    "sol_fraction",
    "vs_compile",
]


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(
        allow_null=True, help_text="Ranking among LLMs (fast_1 over the whole set); null for baselines"
    )
    kind = serializers.ChoiceField(choices=["llm", "baseline"])
    name = serializers.CharField()
    llm_id = serializers.IntegerField(allow_null=True)
    baseline = serializers.CharField(help_text="tf32, fp32 or compile for baseline rows")
    level = serializers.IntegerField(allow_null=True, help_text="null = overall")
    problems = serializers.IntegerField(help_text="Active problems in the set at this level")
    attempted = serializers.IntegerField()
    coverage_pct = serializers.FloatField(allow_null=True, help_text="attempted / problems, percent")
    correct = serializers.IntegerField()
    correctness_pct = serializers.FloatField(allow_null=True, help_text="correct / attempted, percent")
    speedup = serializers.FloatField(allow_null=True, help_text="Correct Speedup: geomean vs PyTorch TF32")
    fast_p = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="p -> percent of all problems in the set (baselines: of those measured); fast_1 ranks the LLMs",
    )
    memory_efficiency = serializers.FloatField(allow_null=True)
    mem_efficient_pct = serializers.FloatField(allow_null=True)
    mem_increased_pct = serializers.FloatField(allow_null=True)
    kernels = serializers.IntegerField(allow_null=True)
    standard_speedup = serializers.FloatField(allow_null=True, help_text="Standard protocol: vs FP32, D1 gate")
    standard_correct = serializers.IntegerField()
    inflation = serializers.FloatField(allow_null=True, help_text="standard_speedup / speedup")
    sol_fraction = serializers.FloatField(
        allow_null=True, help_text="Geomean over correct problems of roofline bound / kernel time"
    )
    vs_compile = serializers.FloatField(
        allow_null=True, help_text="Geomean over correct problems of stored torch.compile time / kernel time"
    )


class LeaderboardSerializer(serializers.Serializer):
    hardware = serializers.CharField()
    problem_set = serializers.CharField()
    level = serializers.IntegerField(allow_null=True)
    sort = serializers.CharField()
    stack = serializers.CharField(help_text="The software stack the rows are measured on; '' = every stack")
    rows = LeaderboardRowSerializer(many=True)


def _params(query) -> dict:
    board = board_request(query)
    return {
        "hardware": board.hardware,
        "problem_set": board.problem_set,
        "level": board.level,
        "sort": board.sort,
        "version": board.version,
        "stack": board.stack,
    }


class LeaderboardApi(APIView):
    """The ranked rows the leaderboard page shows: LLMs (eligible kernels only) and the PyTorch baselines."""

    permission_classes = [AllowAny]

    @extend_schema(parameters=PARAMETERS, responses=LeaderboardSerializer)
    def get(self, request: Request) -> Response:
        params = _params(request.query_params)
        rows = [r.as_dict() for r in leaderboard_rows(**params)]
        return Response(LeaderboardSerializer({**params, "rows": rows}).data)


class LeaderboardCsvApi(APIView):
    """The same rows as CSV (percentages in 0-100)."""

    permission_classes = [AllowAny]

    @extend_schema(parameters=PARAMETERS, responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request: Request) -> HttpResponse:
        params = _params(request.query_params)
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        level = f"level{params['level']}" if params["level"] else "overall"
        filename = f"leaderboard-{params['hardware']}-{level}.csv".replace('"', "")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        writer = csv.writer(response)
        writer.writerow(["hardware", "problem_set", *CSV_FIELDS])
        for row in leaderboard_rows(**params):
            values = row.as_dict()
            values.update({f"fast_{k}_pct": v for k, v in row.fast_p.items()})
            cells = [params["hardware"], params["problem_set"], *(values[f] for f in CSV_FIELDS)]
            writer.writerow([spreadsheet_cell(v) for v in cells])
        return response


urlpatterns = [
    path("leaderboard/", LeaderboardApi.as_view(), name="leaderboard-api"),
    path("leaderboard.csv", LeaderboardCsvApi.as_view(), name="leaderboard-csv"),
]
