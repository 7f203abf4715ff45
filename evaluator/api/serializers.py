"""Serializers of the evaluations read API."""

from __future__ import annotations

from rest_framework import serializers

from evaluator.models import DistributionResult, Evaluation


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


class EvaluationDetailSerializer(EvaluationSerializer):
    distributions = DistributionResultSerializer(many=True, read_only=True)
    result = serializers.JSONField(read_only=True, help_text="The full result record (protocol.md section 8).")

    class Meta(EvaluationSerializer.Meta):
        fields = [*EvaluationSerializer.Meta.fields, "distributions", "result"]
