"""Serializers of the catalogue API. Input and output serializers are separate wherever they differ."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from catalogue.models import LLM, Kernel, Problem, Submission
from leaderboard.selectors.submissions import submission_progress


class LLMSerializer(serializers.ModelSerializer):
    owner: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Who may upload under it (with the group and staff)."
    )
    owner_group: serializers.SlugRelatedField[Group] = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = LLM
        fields = ["id", "name", "organisation", "notes", "owner", "owner_group", "created_at"]


class LLMTransferSerializer(serializers.Serializer):
    """Input of POST /api/llms/{id}/transfer/ (staff): the new owner and/or group; blank or omitted: none."""

    owner = serializers.CharField(required=False, allow_blank=True, default="", help_text="A username.")
    owner_group = serializers.CharField(required=False, allow_blank=True, default="", help_text="A group name.")

    def validate_owner(self, value: str) -> Any:
        if not value:
            return None
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: value}).first()
        if user is None:
            raise serializers.ValidationError(f"No user {value!r}.")
        return user

    def validate_owner_group(self, value: str) -> Any:
        if not value:
            return None
        group = Group.objects.filter(name=value).first()
        if group is None:
            raise serializers.ValidationError(f"No group {value!r}.")
        return group


class ProblemSerializer(serializers.ModelSerializer):
    class Meta:
        model = Problem
        fields = [
            "id",
            "problem_set",
            "level",
            "problem_id",
            "name",
            "filename",
            "sha256",
            "core",
            "active",
            "inactive_reason",
            "degenerate",
            "is_latest",
            "is_demo",
            "created_at",
        ]


class ProblemDetailSerializer(ProblemSerializer):
    class Meta(ProblemSerializer.Meta):
        fields = [*ProblemSerializer.Meta.fields, "degenerate_evidence", "source", "origin"]


class KernelSerializer(serializers.ModelSerializer):
    llm_name = serializers.CharField(source="llm.name", read_only=True)
    level = serializers.IntegerField(source="problem.level", read_only=True)
    problem_number = serializers.IntegerField(source="problem.problem_id", read_only=True)

    class Meta:
        model = Kernel
        fields = ["id", "submission", "llm", "llm_name", "problem", "level", "problem_number", "sample", "sha256"]


class KernelDetailSerializer(KernelSerializer):
    class Meta(KernelSerializer.Meta):
        fields = [*KernelSerializer.Meta.fields, "source", "created_at"]


class BundleReportItemSerializer(serializers.Serializer):
    """One row of the per-file report: what the parser did with one file, JSON key or JSONL line."""

    name = serializers.CharField()
    status = serializers.CharField(help_text='"accepted" or "skipped"')
    reason = serializers.CharField(allow_blank=True)
    level = serializers.IntegerField(allow_null=True)
    problem_id = serializers.IntegerField(allow_null=True)
    sample = serializers.IntegerField(allow_null=True)


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file part of a multipart request (documented as binary, not as the URI a FileField reads back as)."""


class SubmissionCreateSerializer(serializers.Serializer):
    """Input of POST /api/submissions/ (multipart)."""

    # `source` names match leaderboard.services.submissions.UPLOAD_FIELDS, which the web form also produces.
    bundle = UploadField(
        source="upload",
        help_text="A .zip/.tar.gz KernelBench run folder, a leaderboard .json, a .jsonl or a single kernel .py.",
    )
    llm = serializers.CharField(source="llm_name", max_length=200, help_text="The LLM's name; created if new.")
    organisation = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    problem_set = serializers.CharField(
        max_length=100, required=False, allow_blank=True, default="", help_text="Default: PROBLEM_SET_DEFAULT."
    )
    hardware = serializers.CharField(
        max_length=50, required=False, allow_blank=True, default="", help_text="Default: EVALUATOR_DEFAULT_HARDWARE."
    )
    level = serializers.IntegerField(min_value=1, max_value=9, required=False, allow_null=True, default=None)
    problem_id = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    sample = serializers.IntegerField(min_value=0, required=False, default=0)
    notes = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")


class PublishedSeedsSerializer(serializers.Serializer):
    """One evaluation's seed commitment, published when it was queued (before its kernel runs)."""

    evaluation = serializers.IntegerField()
    kernel = serializers.IntegerField()
    seeds_digest = serializers.CharField(help_text="sha256 of the master seed's hex text; the master is revealed later")


class SubmissionCreatedSerializer(serializers.Serializer):
    """Output of POST /api/submissions/ (202 Accepted)."""

    id = serializers.IntegerField()
    url = serializers.URLField(help_text="This submission in the API: poll it for progress.")
    page_url = serializers.URLField(help_text="The submission's web page.")
    status = serializers.CharField()
    kernel_count = serializers.IntegerField()
    problem_set = serializers.CharField(help_text="The set the kernels are judged against (default: by hardware).")
    hardware = serializers.CharField()
    report = BundleReportItemSerializer(many=True)
    duplicate = serializers.BooleanField(
        help_text="True (HTTP 200): these kernels were already uploaded for this LLM, problem set and hardware; "
        "this is the earlier submission and nothing new was stored."
    )
    evaluations = PublishedSeedsSerializer(many=True)


class BundleRejectedSerializer(serializers.Serializer):
    """400 answer when the bundle is rejected whole; nothing was stored."""

    detail = serializers.CharField()
    report = BundleReportItemSerializer(many=True)
    # A field named like Serializer.errors (DRF's metaclass moves declared fields out of the class body)
    errors = serializers.DictField(  # type: ignore[assignment]
        required=False, help_text="Per-field errors, when a form field was invalid."
    )


class BudgetRefusedSerializer(BundleRejectedSerializer):
    """429 answer when an upload would pass a compute budget; nothing was stored or queued."""

    limit = serializers.ChoiceField(choices=["kernels_per_day", "gpu_seconds_per_day", "queued_max"])
    subject = serializers.CharField(help_text="Whose budget: 'account \"alice\"' or 'LLM \"my-model\"'.")
    resets_at = serializers.DateTimeField(allow_null=True, help_text="When enough use leaves the 24-hour window.")


class BudgetLimitSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label (moved out by DRF)
    limit = serializers.IntegerField()
    used = serializers.FloatField(help_text="For GPU-seconds: finished evaluations' use plus `reserved`.")
    remaining = serializers.FloatField()
    reserved = serializers.FloatField(
        help_text="GPU-seconds held by kernels sent to a worker or running (the harness timeout each, until they "
        "finish); 0 for the other limits."
    )
    resets_at = serializers.DateTimeField(allow_null=True)


class BudgetEntrySerializer(serializers.Serializer):
    subject = serializers.CharField()
    exempt = serializers.BooleanField()
    limits = BudgetLimitSerializer(many=True)


class BudgetSerializer(serializers.Serializer):
    """GET /api/budget/: the account's budget and that of each LLM the account may upload under."""

    account = BudgetEntrySerializer()
    llms = BudgetEntrySerializer(many=True)
    window_hours = serializers.IntegerField()


class KernelProgressSerializer(serializers.Serializer):
    kernel_id = serializers.IntegerField()
    evaluation_id = serializers.IntegerField()
    level = serializers.IntegerField()
    problem_id = serializers.IntegerField()
    problem_name = serializers.CharField()
    sample = serializers.IntegerField()
    status = serializers.CharField()
    result_status = serializers.CharField(allow_blank=True)
    correct = serializers.BooleanField(allow_null=True)
    speedup = serializers.FloatField(allow_null=True)
    attempts = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)


class ProgressSerializer(serializers.Serializer):
    status = serializers.CharField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    correct = serializers.IntegerField()
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    failed = serializers.IntegerField()
    percent = serializers.IntegerField()
    finished = serializers.BooleanField()
    queue_position = serializers.IntegerField(
        allow_null=True, help_text="Queued evaluations ahead of this submission's first queued one, same queue."
    )
    kernels = KernelProgressSerializer(many=True)


class SubmissionSerializer(serializers.ModelSerializer):
    llm_name = serializers.CharField(source="llm.name", read_only=True)
    uploader = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "page_url",
            "llm",
            "llm_name",
            "uploader",
            "status",
            "created_at",
            "problem_set",
            "hardware",
            "bundle_name",
            "bundle_format",
            "bundle_sha256",
            "notes",
            "kernel_count",
            "evaluated_count",
            "correct_count",
        ]

    def get_uploader(self, obj: Submission) -> str:
        return obj.uploader.get_username() if obj.uploader else ""

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, obj: Submission) -> str:
        return _absolute(self.context.get("request"), reverse("api-submission-detail", args=[obj.pk]))

    @extend_schema_field(OpenApiTypes.URI)
    def get_page_url(self, obj: Submission) -> str:
        return _absolute(self.context.get("request"), obj.get_absolute_url())


class SubmissionDetailSerializer(SubmissionSerializer):
    progress = serializers.SerializerMethodField()
    report = BundleReportItemSerializer(many=True, read_only=True)
    claimed_results = serializers.JSONField(read_only=True)

    class Meta(SubmissionSerializer.Meta):
        fields = [*SubmissionSerializer.Meta.fields, "progress", "report", "claimed_results"]

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, obj: Submission) -> dict[str, Any]:
        return ProgressSerializer(submission_progress(submission=obj)).data


class RerunResultSerializer(serializers.Serializer):
    """Answer of a staff re-run: the new evaluations, now queued."""

    evaluation_ids = serializers.ListField(child=serializers.IntegerField())


def _absolute(request: Any, path: str) -> str:
    return request.build_absolute_uri(path) if request is not None else path
