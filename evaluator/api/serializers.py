"""Serializers of the evaluations read API and of the audit API (flags, judge results, reviews, imports)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluator.models import AuditFlag, DistributionResult, Evaluation, ReEvaluation, SeedCommitment
from evaluator.selectors.stacks import evaluation_stack
from evaluator.services.audit import REVIEW_ACTIONS


class DistributionResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = DistributionResult
        fields = ["name", "passed", "skipped", "skip_reason", "max_abs_error", "max_rel_error", "trials", "errors"]


def _commitment(evaluation: Evaluation) -> SeedCommitment | None:
    """The evaluation's seed commitment, if it has one (loaded with select_related by the view)."""
    try:
        return evaluation.seed_commitment
    except SeedCommitment.DoesNotExist:
        return None


def _published(evaluation: Evaluation) -> SeedCommitment | None:
    row = _commitment(evaluation)
    return row if row is not None and row.published_at is not None else None


class ReEvaluationSerializer(serializers.Serializer):
    """Why the site queued an evaluation itself: its kernel was measured on another stack than workers run now."""

    previous = serializers.IntegerField(allow_null=True, help_text="the evaluation it re-runs")
    stack = serializers.CharField(help_text="the stack it was queued for")
    previous_stack = serializers.CharField()


class EvaluationSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="kernel.submission_id", read_only=True)
    problem = serializers.IntegerField(source="kernel.problem_id", read_only=True)
    llm = serializers.IntegerField(source="kernel.llm_id", read_only=True)
    seeds_digest = serializers.SerializerMethodField(
        help_text="sha256 of the master seed, published when the evaluation was queued (before the run); older "
        "verdicts: the record's own, published with the verdict"
    )
    stack = serializers.SerializerMethodField(help_text="The software stack the verdict was measured on")
    re_evaluation = serializers.SerializerMethodField(
        help_text="Set when the site queued this evaluation because its kernel's stack changed"
    )

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "kernel",
            "submission",
            "problem",
            "llm",
            "hardware",
            "status",
            "is_current",
            "attempts",
            "queued_at",
            "started_at",
            "finished_at",
            "worker",
            "result_status",
            "correct",
            "standard_correct",
            "reference_constant",
            "speedup",
            "speedup_ci_low",
            "speedup_ci_high",
            "speedup_fp32",
            "memory_ratio",
            "candidate_ms",
            "error",
            "seeds_digest",
            "stack",
            "re_evaluation",
        ]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_seeds_digest(self, evaluation: Evaluation) -> str | None:
        row = _published(evaluation)
        if row is not None:
            return row.digest
        value = ((evaluation.result or {}).get("environment") or {}).get("seeds_digest")
        return value if isinstance(value, str) else None

    @extend_schema_field(serializers.CharField())
    def get_stack(self, evaluation: Evaluation) -> str:
        return evaluation_stack(evaluation)

    @extend_schema_field(ReEvaluationSerializer(allow_null=True))
    def get_re_evaluation(self, evaluation: Evaluation) -> dict | None:
        try:
            rerun = evaluation.re_evaluation
        except ReEvaluation.DoesNotExist:
            return None
        return {"previous": rerun.previous_id, "stack": rerun.stack, "previous_stack": rerun.previous_stack}


class SeedsSerializer(serializers.Serializer):
    """The verdict's committed seeds: the digest always (from the moment the evaluation is queued), the master seed
    once revealed (README, "How a reader checks a verdict")."""

    digest = serializers.CharField(allow_null=True)
    scheme = serializers.CharField(allow_null=True)
    published_at = serializers.DateTimeField(
        allow_null=True, help_text="when the digest was published, before the run; null: with the verdict (older)"
    )
    fixed_before_run = serializers.BooleanField(
        help_text="the digest was published before the kernel ran (and a finished record commits to it)"
    )
    master = serializers.CharField(allow_null=True, help_text="null until revealed")
    revealed_at = serializers.DateTimeField(allow_null=True)
    command = serializers.CharField(allow_null=True, help_text="re-runs the verdict, once revealed")


class EvaluationDetailSerializer(EvaluationSerializer):
    distributions = DistributionResultSerializer(many=True, read_only=True)
    result = serializers.JSONField(read_only=True, help_text="The full result record (docs/protocol.md section 8).")
    seeds = serializers.SerializerMethodField()

    class Meta(EvaluationSerializer.Meta):
        fields = [*EvaluationSerializer.Meta.fields, "distributions", "result", "seeds"]

    @extend_schema_field(SeedsSerializer)
    def get_seeds(self, evaluation: Evaluation) -> dict:
        from evaluator.selectors.seeds import revealed_seeds

        env = (evaluation.result or {}).get("environment") or {}
        shown = revealed_seeds(evaluation_id=evaluation.pk)
        published = _published(evaluation)
        return {
            "digest": published.digest if published else env.get("seeds_digest"),
            "scheme": published.scheme if published else env.get("seeds_scheme"),
            "published_at": published.published_at if published else None,
            "fixed_before_run": published is not None,
            "master": shown.master if shown else None,
            "revealed_at": shown.revealed_at if shown else None,
            "command": shown.command if shown else None,
        }


# --- Audit ------------------------------------------------------------------------------------------------------


class AuditFlagSerializer(serializers.ModelSerializer):
    reviewed_by = serializers.CharField(source="reviewed_by.username", default=None, read_only=True)
    status = serializers.SerializerMethodField()

    class Meta:
        model = AuditFlag
        fields = [
            "id",
            "kernel",
            "source",
            "source_name",
            "verdict",
            "severity",
            "classes",
            "evidence",
            "rationale",
            "confidence",
            "review_state",
            "reviewed_by",
            "reviewed_at",
            "review_note",
            "created_at",
            "status",
        ]
        read_only_fields = fields

    def get_status(self, flag: AuditFlag) -> str:
        """ "ok" for a verdict; "audit_error" when a judge was asked but gave none (timeout, invalid answer)."""
        raw = flag.raw if isinstance(flag.raw, dict) else {}
        return str(raw.get("status") or "ok")


class JudgeStatusSerializer(serializers.Serializer):
    """Whether LLM judges are configured (evaluator.audit.config.JudgeStatus)."""

    configured = serializers.BooleanField()
    judges = serializers.ListField(child=serializers.CharField())
    message = serializers.CharField()


class KernelFlagsSerializer(serializers.Serializer):
    """GET /api/kernels/<id>/flags/: the kernel, the judges' status and its flags (newest first)."""

    kernel = serializers.IntegerField()
    judges = JudgeStatusSerializer()
    flags = AuditFlagSerializer(many=True)


class EvidenceSerializer(serializers.Serializer):
    lines = serializers.CharField(required=False, allow_blank=True, default="")
    quote = serializers.CharField(required=False, allow_blank=True, default="")
    why = serializers.CharField(required=False, allow_blank=True, default="")


class JudgeResultInputSerializer(serializers.Serializer):
    judge = serializers.CharField(max_length=150, help_text="Name of the judge that produced the result.")
    verdict = serializers.CharField(max_length=30, help_text="clean | suspicious | hack")
    classes = serializers.ListField(child=serializers.CharField(max_length=10), required=False, default=list)
    evidence = EvidenceSerializer(many=True, required=False, default=list)
    rationale = serializers.CharField(required=False, allow_blank=True, default="")
    failing_input = serializers.CharField(required=False, allow_blank=True, default="")
    legit_specializations = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1, allow_null=True, default=None)


class ReviewInputSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=sorted(REVIEW_ACTIONS))
    note = serializers.CharField(max_length=5000)


class AuditRequestSerializer(serializers.Serializer):
    static = serializers.BooleanField(default=True, help_text="Re-run the static layer now.")
    judge = serializers.CharField(required=False, allow_blank=True, default="", help_text="Judge name; '' = all.")
    judges = serializers.BooleanField(default=False, help_text="Queue the LLM judge(s).")
    force = serializers.BooleanField(default=False, help_text="Ask judges again even if they already answered.")


class AuditStartedSerializer(serializers.Serializer):
    static_flags = serializers.IntegerField()
    judges_queued = serializers.ListField(child=serializers.CharField())


class HackFlagsImportSerializer(serializers.Serializer):
    llm = serializers.CharField(max_length=200)
    submission = serializers.IntegerField(required=False, allow_null=True, default=None)
    judge = serializers.CharField(max_length=150, required=False, default="api")
    data = serializers.JSONField(  # type: ignore[assignment]  # named like Serializer.data (DRF moves fields out)
        help_text="A hack_flags.json document: list, {flags: [...]}, or key -> record."
    )


class ImportReportSerializer(serializers.Serializer):
    created = serializers.ListField(child=serializers.IntegerField())
    skipped = serializers.ListField(child=serializers.CharField())
    errors = serializers.ListField(child=serializers.CharField())  # type: ignore[assignment]  # like Serializer.errors
