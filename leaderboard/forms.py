"""Forms of the leaderboard app: the bundle upload form."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings

from catalogue.models import LLM
from leaderboard.selectors.llms import llm_list_uploadable
from leaderboard.selectors.problem_sets import problem_set_default, problem_sets


class SubmitForm(forms.Form):
    """Upload a kernel bundle for an existing LLM or a new one. Validation of the bundle itself is the parser's."""

    llm = forms.ModelChoiceField(
        queryset=LLM.objects.all(), required=False, empty_label="— a new LLM (name it below) —", label="LLM"
    )
    new_llm = forms.CharField(max_length=200, required=False, label="New LLM name")
    organisation = forms.CharField(max_length=200, required=False)
    bundle = forms.FileField(
        help_text="A .zip or .tar.gz KernelBench run folder, a leaderboard .json, a .jsonl, or one kernel .py."
    )
    problem_set = forms.ChoiceField(choices=(), required=False)
    hardware = forms.CharField(max_length=50, required=False)
    level = forms.IntegerField(min_value=1, max_value=9, required=False, help_text="Only for a single .py kernel.")
    problem_id = forms.IntegerField(min_value=1, required=False, help_text="Only for a single .py kernel.")
    sample = forms.IntegerField(min_value=0, required=False, initial=0)
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000)

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if user is not None:  # offer only the LLMs this user may upload under (the service checks again)
            cast(forms.ModelChoiceField, self.fields["llm"]).queryset = llm_list_uploadable(user=user)
        sets = problem_sets()
        default = problem_set_default()
        if default not in sets:
            sets.insert(0, default)
        cast(forms.ChoiceField, self.fields["problem_set"]).choices = [
            (s, s) for s in sorted(sets, key=lambda s: (s != default, s))
        ]
        self.fields["problem_set"].initial = default
        self.fields["hardware"].initial = settings.EVALUATOR_DEFAULT_HARDWARE

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or self.cleaned_data  # Form.clean returns cleaned_data
        llm, new_llm = cleaned.get("llm"), (cleaned.get("new_llm") or "").strip()
        if llm and new_llm:
            self.add_error("new_llm", "Pick an existing LLM or name a new one, not both.")
        elif not llm and not new_llm:
            self.add_error("new_llm", "Pick an existing LLM or name a new one.")
        cleaned["llm_name"] = llm.name if llm else new_llm
        cleaned["upload"] = cleaned.get("bundle")  # the names of leaderboard.services.submissions.UPLOAD_FIELDS
        return cleaned
