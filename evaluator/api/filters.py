"""django-filter FilterSet of the evaluations API."""

from __future__ import annotations

import django_filters

from evaluator.models import Evaluation


class EvaluationFilter(django_filters.FilterSet):
    submission = django_filters.NumberFilter(field_name="kernel__submission")
    llm = django_filters.NumberFilter(field_name="kernel__llm")
    problem = django_filters.NumberFilter(field_name="kernel__problem")
    level = django_filters.NumberFilter(field_name="kernel__problem__level")

    class Meta:
        model = Evaluation
        fields = ["kernel", "hardware", "status", "result_status", "correct", "is_current", "submission", "llm"]
