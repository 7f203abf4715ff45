"""Writes about LLMs: find-or-create by name (the first uploader becomes the owner) and ownership transfers."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction

from catalogue.models import LLM
from catalogue.names import name_skeleton, name_skeleton_fields, name_visible
from leaderboard.selectors.llms import llm_find

LLM_NAME_MAX = int(LLM._meta.get_field("name").max_length or 0)  # a CharField's: always set


class LLMOwnershipError(Exception):
    """The uploader may not upload under this LLM (selectors.llms.llm_can_upload)."""


class LLMLookAlikeError(LLMOwnershipError):
    """The name is not an existing LLM's but looks like one (the same skeleton: catalogue.names)."""


def llm_normalise_name(name: str) -> str:
    """The stored form of an LLM name (characters that render as nothing removed, whitespace collapsed:
    catalogue.names); raises ValueError when empty, made of marks alone or too long."""
    name = name_visible(name)
    if not name:
        raise ValueError("The LLM needs a name.")
    if not name_skeleton(name):  # combining marks alone: nothing a reader could tell apart from another such name
        raise ValueError("The LLM name has no visible letter, digit or sign.")
    if len(name) > LLM_NAME_MAX:
        raise ValueError(f"The LLM name is longer than {LLM_NAME_MAX} characters.")
    return name


def llm_get_or_create(*, name: str, organisation: str = "", notes: str = "", owner: User | None = None) -> LLM:
    """The LLM called `name` (case-insensitive, whitespace-normalised match), created if new with `owner` as owner.

    Organisation and notes only fill blanks on an existing row, so an upload never overwrites what an admin set.
    Callers that act for a user check llm_can_upload first (and again on the returned row): this does not.
    A name that only looks like an existing LLM's (Cyrillic letters, dash variants, marks: a shared skeleton,
    another spelling) raises LLMLookAlikeError naming that LLM.
    """
    name = llm_normalise_name(name)
    organisation = organisation.strip()[:200]
    llm = llm_find(name=name)
    if llm is None:
        try:
            with transaction.atomic():  # savepoint: two uploads may create the same new LLM at once
                return LLM.objects.create(
                    name=name,
                    **name_skeleton_fields(name),
                    organisation=organisation,
                    notes=notes,
                    owner=owner,
                )
        except IntegrityError:
            llm = LLM.objects.get(name__iexact=name)
    if llm.name.casefold() != name.casefold():
        raise LLMLookAlikeError(llm_look_alike_message(name=name, llm=llm))
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


def llm_transfer(*, llm: LLM, owner: User | None, owner_group: Group | None = None) -> LLM:
    """Give the LLM to another owner and/or group (staff only: the caller checks). Both None: staff-only LLM."""
    llm.owner = owner
    llm.owner_group = owner_group
    llm.save(update_fields=["owner", "owner_group"])
    return llm


def llm_look_alike_message(*, name: str, llm: LLM) -> str:
    owner = llm.owner.get_username() if llm.owner else (f"the group {llm.owner_group.name}" if llm.owner_group else "")
    owned = f", owned by {owner}" if owner else ""
    return (
        f"The LLM name {name!r} looks like the existing LLM {llm.name!r} (#{llm.pk}{owned}): names are compared "
        "without case, invisible characters, marks, dash variants and look-alike letters. Use that exact name if it is "
        "yours, or pick a clearly different one."
    )
