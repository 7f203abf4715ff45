from django.contrib import admin

from evaluator.admin_actions import rerun_evaluations
from evaluator.models import AuditFlag, Baseline, ComputeBudget, DistributionResult, Evaluation


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
