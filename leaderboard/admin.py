from django.contrib import admin

from evaluator.admin_actions import rerun_submissions
from leaderboard.models import LLM, Kernel, Problem, Submission


@admin.register(LLM)
class LLMAdmin(admin.ModelAdmin):
    list_display = ["name", "organisation", "created_at"]
    search_fields = ["name", "organisation"]


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
