from django.contrib import admin

from evaluator.admin_actions import rerun_evaluations
from evaluator.models import AuditFlag, Baseline, DistributionResult, Evaluation


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
