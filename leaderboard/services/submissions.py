"""Writes about submissions: turn an uploaded bundle into a Submission, its Kernels and queued Evaluations."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import Q

from catalogue.fingerprints import source_fingerprint
from catalogue.models import LLM, Kernel, Problem, Submission
from evaluator.models import Evaluation
from evaluator.selectors.budget import BudgetRefusal, budget_refusal
from evaluator.services.evaluations import HARDWARE_RE, evaluations_enqueue, kernels_audit_enqueue
from leaderboard.bundles import BundleError, ParsedBundle, check_bundle_size, parse_bundle, read_upload
from leaderboard.selectors.llms import llm_can_upload, llm_find
from leaderboard.selectors.problem_sets import problem_set_default, unknown_problem_set_message
from leaderboard.services.llms import (
    LLMLookAlikeError,
    LLMOwnershipError,
    llm_get_or_create,
    llm_look_alike_message,
    llm_normalise_name,
)

# The cleaned fields the web form and the API serializer both hand to submission_create_from_upload.
UPLOAD_FIELDS = (
    "upload",
    "llm_name",
    "organisation",
    "problem_set",
    "hardware",
    "level",
    "problem_id",
    "sample",
    "notes",
)


class BudgetExceeded(BundleError):
    """The upload would pass a compute budget of the account or the LLM (evaluator.selectors.budget): refused
    whole, nothing stored or queued (HTTP 429, Retry-After when the limit resets)."""

    status = 429

    def __init__(self, refusal: BudgetRefusal, report: list[dict[str, Any]] | None = None) -> None:
        super().__init__(refusal.message, report)
        self.refusal = refusal


def _resolve_problems(bundle: ParsedBundle, problem_set: str) -> dict[tuple[int, int], Problem]:
    """Match each entry to the latest source of (level, problem_id) in the problem set; drop unknown ones."""
    pairs = {(e.level, e.problem_id) for e in bundle.entries}
    query = Q()
    for level, problem_id in pairs:
        query |= Q(level=level, problem_id=problem_id)
    problems = {
        (p.level, p.problem_id): p
        for p in Problem.objects.filter(query, problem_set=problem_set, is_latest=True).only(
            "id", "level", "problem_id", "problem_set"
        )
    }
    for entry in list(bundle.entries):
        if (entry.level, entry.problem_id) not in problems:
            bundle.drop(entry, f"unknown problem L{entry.level}/{entry.problem_id} in problem set {problem_set}")
    return problems


def submission_create(
    *,
    uploader: User | AnonymousUser | None,
    llm_name: str,
    filename: str,
    data: bytes,
    organisation: str = "",
    problem_set: str | None = None,
    hardware: str | None = None,
    level: int | None = None,
    problem_id: int | None = None,
    sample: int = 0,
    notes: str = "",
    allow_duplicate: bool = False,
) -> Submission:
    """Parse a bundle and store it as one Submission with its Kernels and one queued Evaluation per kernel.

    `uploader` None is the project itself (load_demo, imports): no ownership check. A user may upload only under an
    LLM they may upload to (selectors.llms.llm_can_upload; a new LLM becomes theirs), else LLMOwnershipError. The
    same kernels (same bundle hash, same problems and samples) already uploaded for this LLM, problem set and
    hardware are not stored twice: the earlier submission comes back with `duplicate` set (unless allow_duplicate).

    Everything is written in one transaction, and the `evaluator.evaluate_kernel` messages (queue
    `eval-<hardware>`) are sent only after it commits. Raises BundleError (with the per-file report) when nothing
    in the bundle can be evaluated or the bundle is unsafe; then nothing is stored.
    """
    hardware = (hardware or settings.EVALUATOR_DEFAULT_HARDWARE).strip().lower()
    problem_set = (problem_set or problem_set_default(hardware=hardware)).strip()
    if not HARDWARE_RE.match(hardware):
        raise BundleError(f"Invalid hardware label {hardware!r}: lowercase letters, digits, '.', '_' or '-'.")
    if hardware not in (labels := hardware_labels()):
        # No worker consumes eval-<label> for a label nobody serves: the kernels would wait forever.
        raise BundleError(
            f"Unknown hardware label {hardware!r}: this deployment evaluates on {', '.join(labels)} "
            "(EVALUATOR_HARDWARE_LABELS)."
        )
    if not problem_set or len(problem_set) > 100:
        raise BundleError("Invalid problem set label.")
    if not Problem.objects.filter(problem_set=problem_set).exists():
        raise BundleError(unknown_problem_set_message(problem_set))
    acting = uploader is not None
    if uploader is not None:  # acting: refuse early, before parsing; checked again below on the locked row
        _check_may_upload(uploader=uploader, llm_name=llm_name)

    bundle = parse_bundle(filename=filename, data=data, level=level, problem_id=problem_id, sample=sample)
    problems = _resolve_problems(bundle, problem_set)
    if not bundle.entries:
        raise BundleError("No kernel in the bundle matches a problem of this problem set.", bundle.report_dicts())

    with transaction.atomic():
        try:
            llm = llm_get_or_create(
                name=llm_name,
                organisation=organisation,
                owner=uploader if acting and uploader is not None and uploader.is_authenticated else None,
            )
        except ValueError as exc:
            raise BundleError(str(exc), bundle.report_dicts()) from exc
        # One upload at a time per LLM, so two identical uploads cannot both pass the duplicate check.
        llm = LLM.objects.select_for_update().get(pk=llm.pk)
        if uploader is not None and not llm_can_upload(llm=llm, user=uploader):  # acting
            raise LLMOwnershipError(_not_yours(llm))
        if not allow_duplicate:
            earlier = _duplicate_of(
                llm=llm, problem_set=problem_set, hardware=hardware, bundle=bundle, problems=problems
            )
            if earlier is not None:
                earlier.duplicate = True
                return earlier
        if acting:
            # One upload at a time per account too, so two parallel uploads cannot both fit the last of a budget.
            if uploader is not None and uploader.is_authenticated:
                get_user_model().objects.select_for_update().filter(pk=uploader.pk).exists()
            refusal = budget_refusal(user=uploader, llm=llm, kernels=len(bundle.entries))
            if refusal is not None:
                raise BudgetExceeded(refusal, bundle.report_dicts())
        submission = Submission.objects.create(
            llm=llm,
            uploader=uploader if uploader is not None and uploader.is_authenticated else None,
            status=Submission.Status.RECEIVED,
            problem_set=problem_set,
            hardware=hardware,
            bundle_name=filename[-255:],
            bundle_format=bundle.format,
            bundle_sha256=bundle.sha256,
            notes=notes,
            report=bundle.report_dicts(),
            claimed_results=_claims(bundle),
            kernel_count=len(bundle.entries),
        )
        kernels = Kernel.objects.bulk_create(
            [
                Kernel(
                    submission=submission,
                    llm=llm,
                    problem=problems[(entry.level, entry.problem_id)],
                    sample=entry.sample,
                    source=entry.source,
                    sha256=hashlib.sha256(entry.source.encode()).hexdigest(),
                    fingerprint=source_fingerprint(entry.source),
                )
                for entry in bundle.entries
            ]
        )
        evaluations = Evaluation.objects.bulk_create(
            [
                Evaluation(kernel=kernel, hardware=hardware, status=Evaluation.Status.QUEUED, task_id=str(uuid.uuid4()))
                for kernel in kernels
            ]
        )
        outbox = evaluations_enqueue(evaluations=evaluations)
        kernels_audit_enqueue(kernel_ids=[kernel.pk for kernel in kernels])
    # The broker was unreachable: everything is stored and the reaper sends the messages once it is back.
    submission.evaluation_pending = bool(outbox.unsent)
    submission.duplicate = False
    return submission


def _not_yours(llm: LLM) -> str:
    if llm.owner_id is None and llm.owner_group_id is None:
        return f"The LLM {llm.name!r} has no owner: only staff may upload under it (ask them to transfer it to you)."
    owner = llm.owner.get_username() if llm.owner else f"the group {llm.owner_group}"
    return f"The LLM {llm.name!r} belongs to {owner}: pick another name, or ask staff to transfer it."


def _check_may_upload(*, uploader: User | AnonymousUser, llm_name: str) -> None:
    try:
        name = llm_normalise_name(llm_name)
    except ValueError:
        return  # reported with the bundle's report below
    llm = llm_find(name=name)
    if llm is not None and llm.name.casefold() != name.casefold():
        raise LLMLookAlikeError(llm_look_alike_message(name=name, llm=llm))
    if (llm is None and not uploader.is_authenticated) or (
        llm is not None and not llm_can_upload(llm=llm, user=uploader)
    ):
        raise LLMOwnershipError(_not_yours(llm) if llm else "Log in to upload.")


def _duplicate_of(
    *, llm: LLM, problem_set: str, hardware: str, bundle: ParsedBundle, problems: dict[tuple[int, int], Problem]
) -> Submission | None:
    """An earlier submission of the same kernels for this LLM, problem set and hardware: the same problems and
    samples (one .py file may be uploaded for several problems) with the same source fingerprints, so a copy whose
    comments, docstrings or formatting differ is the same upload (catalogue.fingerprints)."""
    wanted = {(problems[(e.level, e.problem_id)].pk, e.sample, source_fingerprint(e.source)) for e in bundle.entries}
    problem_pk, sample, fingerprint = min(wanted)  # only submissions holding one of the kernels are read
    candidates = (
        Submission.objects.filter(llm=llm, problem_set=problem_set, hardware=hardware, kernel_count=len(wanted))
        .filter(kernels__problem_id=problem_pk, kernels__sample=sample, kernels__fingerprint=fingerprint)
        .distinct()
        .order_by("created_at")
    )
    for candidate in candidates:
        if set(candidate.kernels.values_list("problem_id", "sample", "fingerprint")) == wanted:
            return candidate
    return None


def _claims(bundle: ParsedBundle) -> dict[str, Any] | None:
    """The submitter's own claims (eval_results.json, leaderboard metadata), kept for comparison only."""
    claims: dict[str, Any] = {}
    if bundle.claimed_results:
        claims["eval_results"] = bundle.claimed_results
    if bundle.metadata:
        claims["metadata"] = bundle.metadata
    return claims or None


def hardware_labels() -> list[str]:
    """The hardware labels this deployment has worker pools for: EVALUATOR_HARDWARE_LABELS, always with the default."""
    labels = [settings.EVALUATOR_DEFAULT_HARDWARE, *getattr(settings, "EVALUATOR_HARDWARE_LABELS", [])]
    return list(dict.fromkeys(label.strip().lower() for label in labels if label.strip()))


def submission_create_from_upload(
    *,
    uploader: User | AnonymousUser | None,
    upload: Any,
    llm_name: str,
    organisation: str = "",
    problem_set: str | None = None,
    hardware: str | None = None,
    level: int | None = None,
    problem_id: int | None = None,
    sample: int | None = 0,
    notes: str = "",
) -> Submission:
    """`submission_create` for an uploaded file (web form or API). An upload over BUNDLE_MAX_BYTES is refused
    (BundleTooLarge) on its size, unread, and at most BUNDLE_MAX_BYTES + 1 bytes are ever read; blank optional
    fields mean the defaults."""
    check_bundle_size(getattr(upload, "size", None))
    return submission_create(
        uploader=uploader,
        llm_name=llm_name,
        organisation=organisation or "",
        filename=getattr(upload, "name", "") or "bundle",
        data=read_upload(upload, settings.BUNDLE_MAX_BYTES),
        problem_set=problem_set or None,
        hardware=hardware or None,
        level=level,
        problem_id=problem_id,
        sample=sample or 0,
        notes=notes or "",
    )
