"""Serializers of the evaluations read API and of the audit API (flags, judge results, reviews, imports)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluator.models import AuditFlag, DistributionResult, Evaluation
from evaluator.services.audit import REVIEW_ACTIONS


class DistributionResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = DistributionResult
        fields = ["name", "passed", "skipped", "skip_reason", "max_abs_error", "max_rel_error", "trials", "errors"]


class EvaluationSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="kernel.submission_id", read_only=True)
    problem = serializers.IntegerField(source="kernel.problem_id", read_only=True)
    llm = serializers.IntegerField(source="kernel.llm_id", read_only=True)

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
        ]


class SeedsSerializer(serializers.Serializer):
    """The verdict's committed seeds: the digest always, the master seed once revealed (README, "How a reader
    checks a verdict")."""

    digest = serializers.CharField(allow_null=True)
    scheme = serializers.CharField(allow_null=True)
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
        return {
            "digest": env.get("seeds_digest"),
            "scheme": env.get("seeds_scheme"),
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
