"""django-filter FilterSets of the catalogue API."""

from __future__ import annotations

import django_filters

from catalogue.models import LLM, Kernel, Problem, Submission


class LLMFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    organisation = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = LLM
        fields = ["name", "organisation"]


class ProblemFilter(django_filters.FilterSet):
    class Meta:
        model = Problem
        fields = ["level", "problem_set", "active", "core", "is_latest", "is_demo", "problem_id", "sha256"]


class KernelFilter(django_filters.FilterSet):
    level = django_filters.NumberFilter(field_name="problem__level")
    problem_set = django_filters.CharFilter(field_name="problem__problem_set")

    class Meta:
        model = Kernel
        fields = ["llm", "problem", "submission", "sample", "sha256", "level", "problem_set"]


class SubmissionFilter(django_filters.FilterSet):
    class Meta:
        model = Submission
        fields = ["llm", "status", "hardware", "problem_set", "bundle_sha256"]
