from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from evaluator.admin_actions import rerun_evaluations
from evaluator.models import (
    AuditFlag,
    Baseline,
    ComputeBudget,
    DistributionResult,
    Evaluation,
    ReEvaluation,
    SeedCommitment,
    Webhook,
)


class DistributionResultInline(admin.TabularInline):
    model = DistributionResult
    extra = 0


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ["id", "kernel", "hardware", "status", "result_status", "correct", "speedup", "attempts"]
    list_filter = ["status", "result_status", "hardware", "correct", "is_current"]
    raw_id_fields = ["kernel"]
    inlines = [DistributionResultInline]
    actions = [rerun_evaluations]


@admin.register(DistributionResult)
class DistributionResultAdmin(admin.ModelAdmin):
    list_display = ["evaluation", "name", "passed", "skipped", "max_abs_error", "max_rel_error", "trials"]
    raw_id_fields = ["evaluation"]


@admin.register(Baseline)
class BaselineAdmin(admin.ModelAdmin):
    list_display = ["problem", "hardware", "torch_version", "precision", "median_ms", "peak_memory_bytes"]
    list_filter = ["hardware", "precision", "torch_version"]
    raw_id_fields = ["problem"]


@admin.register(AuditFlag)
class AuditFlagAdmin(admin.ModelAdmin):
    list_display = ["kernel", "source", "source_name", "verdict", "severity", "review_state", "created_at"]
    list_filter = ["source", "verdict", "severity", "review_state"]
    raw_id_fields = ["kernel", "reviewed_by"]


@admin.register(ComputeBudget)
class ComputeBudgetAdmin(admin.ModelAdmin):
    """Staff raise (or cut) the compute budget of one account or one LLM; a blank limit keeps the default setting
    (BUDGET_KERNELS_PER_DAY, BUDGET_GPU_SECONDS_PER_DAY, BUDGET_QUEUED_MAX)."""

    list_display = ["__str__", "kernels_per_day", "gpu_seconds_per_day", "queued_max", "note", "updated_at"]
    search_fields = ["user__username", "llm__name", "note"]
    raw_id_fields = ["user", "llm"]


@admin.register(SeedCommitment)
class SeedCommitmentAdmin(admin.ModelAdmin):
    """Master seeds kept apart from the published records; the master is not shown here until it is revealed."""

    list_display = ["evaluation", "digest", "scheme", "created_at", "revealed_at"]
    list_filter = ["revealed_at"]
    raw_id_fields = ["evaluation"]
    exclude = ["master"]
    readonly_fields = ["evaluation", "digest", "scheme", "revealed_at"]
    actions = ["reveal_now"]

    @admin.action(description="Reveal the seeds now")
    def reveal_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.filter(revealed_at__isnull=True).update(revealed_at=timezone.now())
        self.message_user(request, f"revealed {count} master seed(s)")


@admin.register(ReEvaluation)
class ReEvaluationAdmin(admin.ModelAdmin):
    list_display = ["evaluation", "kernel", "hardware", "previous_stack", "stack", "estimated_seconds", "created_at"]
    list_filter = ["hardware", "stack"]
    raw_id_fields = ["evaluation", "previous", "kernel"]


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ["user", "url", "active", "last_delivery_at", "last_status"]
    list_filter = ["active"]
    raw_id_fields = ["user"]
    exclude = ["secret"]
