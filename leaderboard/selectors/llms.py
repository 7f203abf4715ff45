"""Reads about LLMs: find one by name (look-alikes included), who may upload under one."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from catalogue.models import LLM
from catalogue.names import name_skeletons


def llm_can_upload(*, llm: LLM, user: User | AnonymousUser) -> bool:
    """Staff may upload under any LLM; others under the LLMs they own or whose owner group they belong to.

    An LLM with no owner and no group (the demo, imported ones, or one whose owner was deleted) is staff-only:
    letting the first claimant take it would let anyone take over a known name and its scores.
    """
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_staff:
        return True
    if llm.owner_id is not None and llm.owner_id == user.pk:
        return True
    return llm.owner_group_id is not None and user.groups.filter(pk=llm.owner_group_id).exists()


def llm_list_uploadable(*, user: User | AnonymousUser) -> QuerySet[LLM]:
    """The LLMs `user` may upload under (llm_can_upload as a query)."""
    if not user.is_authenticated or not user.is_active:
        return LLM.objects.none()
    if user.is_staff:
        return LLM.objects.all()
    return LLM.objects.filter(Q(owner=user) | Q(owner_group__in=user.groups.all())).distinct()


def llm_find(*, name: str) -> LLM | None:
    """The LLM called `name` (any case), else the first one whose name looks like it (a shared skeleton:
    catalogue.names.name_skeletons), else None."""
    exact = LLM.objects.filter(name__iexact=name).first()
    if exact is not None:
        return exact
    keys = {key[:200] for key in name_skeletons(name)}
    shared = Q(name_skeleton__in=keys) | Q(name_skeleton_upper__in=keys) | Q(name_skeleton_lower__in=keys)
    return LLM.objects.filter(shared).order_by("pk").first()
