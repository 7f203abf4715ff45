"""Writes about LLMs."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from leaderboard.models import LLM

LLM_NAME_MAX = LLM._meta.get_field("name").max_length


def llm_get_or_create(*, name: str, organisation: str = "", notes: str = "") -> LLM:
    """The LLM called `name` (case-insensitive, whitespace-normalised match), created if new.

    Organisation and notes only fill blanks on an existing row, so an upload never overwrites what an admin set.
    """
    name = " ".join(name.split())
    if not name:
        raise ValueError("The LLM needs a name.")
    if len(name) > LLM_NAME_MAX:
        raise ValueError(f"The LLM name is longer than {LLM_NAME_MAX} characters.")
    organisation = organisation.strip()[:200]
    llm = LLM.objects.filter(name__iexact=name).first()
    if llm is None:
        try:
            with transaction.atomic():  # savepoint: two uploads may create the same new LLM at once
                return LLM.objects.create(name=name, organisation=organisation, notes=notes)
        except IntegrityError:
            llm = LLM.objects.get(name__iexact=name)
    changed = []
    if organisation and not llm.organisation:
        llm.organisation = organisation
        changed.append("organisation")
    if notes and not llm.notes:
        llm.notes = notes
        changed.append("notes")
    if changed:
        llm.save(update_fields=changed)
    return llm
