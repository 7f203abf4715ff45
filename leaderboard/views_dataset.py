"""The public dataset's page and downloads (/dataset/): every finished verdict as JSON lines, its JSON schema and
datasheet (evaluator.dataset)."""

from __future__ import annotations

from collections.abc import Iterator

from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluator.dataset import DATASET_VERSION, DATASHEET_PATH, SCHEMA_PATH, dataset_rows, dataset_size, dumps_row


@require_GET
def dataset(request: HttpRequest) -> HttpResponse:
    rows = dataset_size()
    return render(
        request,
        "leaderboard/dataset.html",
        {"version": DATASET_VERSION, "rows": rows, "datasheet": DATASHEET_PATH.read_text()},
    )


@require_GET
def dataset_jsonl(request: HttpRequest) -> StreamingHttpResponse:
    def lines() -> Iterator[str]:
        for row in dataset_rows():
            yield dumps_row(row) + "\n"

    response = StreamingHttpResponse(lines(), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="kbv-verdicts-{DATASET_VERSION}.jsonl"'
    return response


@require_GET
def dataset_schema(request: HttpRequest) -> FileResponse:
    return FileResponse(SCHEMA_PATH.open("rb"), content_type="application/schema+json", filename="schema.json")


@require_GET
def dataset_datasheet(request: HttpRequest) -> FileResponse:
    return FileResponse(DATASHEET_PATH.open("rb"), content_type="text/markdown; charset=utf-8", filename="DATASHEET.md")
