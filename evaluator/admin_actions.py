"""Admin actions for staff re-runs (registered on the Evaluation and Submission admins). Thin: they call services."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from evaluator.services.reruns import evaluation_rerun, submission_rerun


@admin.action(description="Re-run the selected evaluations (new current rows; old ones kept)")
def rerun_evaluations(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    new = [evaluation_rerun(evaluation_id=pk).pk for pk in queryset.values_list("pk", flat=True)]
    modeladmin.message_user(request, f"Queued {len(new)} re-runs: evaluations {new}.", messages.SUCCESS)


@admin.action(description="Re-run every kernel of the selected submissions")
def rerun_submissions(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    total = sum(len(submission_rerun(submission_id=pk)) for pk in queryset.values_list("pk", flat=True))
    modeladmin.message_user(request, f"Queued {total} re-runs.", messages.SUCCESS)
