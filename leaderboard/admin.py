from django.contrib import admin

from catalogue.models import LLM, ApiToken, Kernel, Problem, Submission
from evaluator.admin_actions import rerun_submissions
from evaluator.services.degenerate import problem_degenerate_review


@admin.action(description="Confirm the selected problems as degenerate (out of the rankings)")
def confirm_degenerate(modeladmin: admin.ModelAdmin, request, queryset) -> None:
    for problem in queryset:
        problem_degenerate_review(problem=problem, action="confirm", user=request.user)
    modeladmin.message_user(request, f"Confirmed {queryset.count()} problem(s) as degenerate.")


@admin.action(description="Clear the degenerate status of the selected problems (back in the rankings)")
def clear_degenerate(modeladmin: admin.ModelAdmin, request, queryset) -> None:
    for problem in queryset:
        problem_degenerate_review(problem=problem, action="clear", user=request.user)
    modeladmin.message_user(request, f"Cleared {queryset.count()} problem(s); new evidence marks them again.")


@admin.register(LLM)
class LLMAdmin(admin.ModelAdmin):
    """Staff transfer an LLM by changing its owner or owner group here (or POST /api/llms/{id}/transfer/)."""

    list_display = ["name", "organisation", "owner", "owner_group", "created_at"]
    list_filter = ["owner_group"]
    search_fields = ["name", "organisation", "owner__username"]
    raw_id_fields = ["owner"]
    exclude = ["name_skeleton", "name_skeleton_upper", "name_skeleton_lower"]

    def save_model(self, request, obj, form, change) -> None:
        from catalogue.names import name_skeleton_fields, name_visible

        obj.name = name_visible(obj.name)
        for field, value in name_skeleton_fields(obj.name).items():  # look-alike names are compared on them
            setattr(obj, field, value)
        super().save_model(request, obj, form, change)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are stored hashed: staff can see and revoke (delete) them, never read a key."""

    list_display = ["user", "prefix", "created_at"]
    search_fields = ["user__username", "prefix"]
    readonly_fields = ["user", "prefix", "digest", "created_at"]

    def has_add_permission(self, request) -> bool:  # keys are made by create_api_token or /account/
        return False


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ["__str__", "problem_set", "level", "problem_id", "core", "active", "degenerate", "is_latest"]
    list_filter = ["problem_set", "level", "core", "active", "degenerate", "is_latest", "is_demo"]
    search_fields = ["name", "sha256"]
    raw_id_fields = ["degenerate_reviewed_by"]
    actions = [confirm_degenerate, clear_degenerate]


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "llm", "uploader", "status", "hardware", "kernel_count", "evaluated_count", "created_at"]
    list_filter = ["status", "hardware", "problem_set"]
    raw_id_fields = ["llm", "uploader"]
    actions = [rerun_submissions]


@admin.register(Kernel)
class KernelAdmin(admin.ModelAdmin):
    list_display = ["id", "llm", "problem", "sample", "sha256", "created_at"]
    list_filter = ["problem__level"]
    raw_id_fields = ["submission", "llm", "problem"]
    search_fields = ["sha256", "llm__name"]
