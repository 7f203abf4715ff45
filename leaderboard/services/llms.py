"""Writes about LLMs: find-or-create by name (the first uploader becomes the owner) and ownership transfers."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import IntegrityError, transaction

from catalogue.models import LLM

LLM_NAME_MAX = LLM._meta.get_field("name").max_length


class LLMOwnershipError(Exception):
    """The uploader may not upload under this LLM (selectors.llms.llm_can_upload)."""


def llm_normalise_name(name: str) -> str:
    """The stored form of an LLM name (whitespace collapsed); raises ValueError when empty or too long."""
    name = " ".join(name.split())
    if not name:
        raise ValueError("The LLM needs a name.")
    if len(name) > LLM_NAME_MAX:
        raise ValueError(f"The LLM name is longer than {LLM_NAME_MAX} characters.")
    return name


def llm_get_or_create(
    *, name: str, organisation: str = "", notes: str = "", owner: AbstractBaseUser | None = None
) -> LLM:
    """The LLM called `name` (case-insensitive, whitespace-normalised match), created if new with `owner` as owner.

    Organisation and notes only fill blanks on an existing row, so an upload never overwrites what an admin set.
    Callers that act for a user check llm_can_upload first (and again on the returned row): this does not.
    """
    name = llm_normalise_name(name)
    organisation = organisation.strip()[:200]
    llm = LLM.objects.filter(name__iexact=name).first()
    if llm is None:
        try:
            with transaction.atomic():  # savepoint: two uploads may create the same new LLM at once
                return LLM.objects.create(name=name, organisation=organisation, notes=notes, owner=owner)
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


def llm_transfer(*, llm: LLM, owner: AbstractBaseUser | None, owner_group: Group | None = None) -> LLM:
    """Give the LLM to another owner and/or group (staff only: the caller checks). Both None: staff-only LLM."""
    llm.owner = owner
    llm.owner_group = owner_group
    llm.save(update_fields=["owner", "owner_group"])
    return llm
