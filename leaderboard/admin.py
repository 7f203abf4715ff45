from django.contrib import admin

from catalogue.models import LLM, ApiToken, Kernel, Problem, Submission
from evaluator.admin_actions import rerun_submissions


@admin.register(LLM)
class LLMAdmin(admin.ModelAdmin):
    """Staff transfer an LLM by changing its owner or owner group here (or POST /api/llms/{id}/transfer/)."""

    list_display = ["name", "organisation", "owner", "owner_group", "created_at"]
    list_filter = ["owner_group"]
    search_fields = ["name", "organisation", "owner__username"]
    raw_id_fields = ["owner"]


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
    list_display = ["__str__", "problem_set", "level", "problem_id", "core", "active", "is_latest", "sha256"]
    list_filter = ["problem_set", "level", "core", "active", "is_latest", "is_demo"]
    search_fields = ["name", "sha256"]


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
