"""Writes about submissions: turn an uploaded bundle into a Submission, its Kernels and queued Evaluations."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import Q

from evaluator.models import Evaluation
from evaluator.services.evaluations import HARDWARE_RE, evaluations_enqueue, kernels_audit_enqueue
from leaderboard.bundles import BundleError, ParsedBundle, parse_bundle, read_upload
from leaderboard.models import Kernel, Problem, Submission
from leaderboard.selectors.problem_sets import problem_set_default, unknown_problem_set_message
from leaderboard.services.llms import llm_get_or_create

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
    uploader: AbstractBaseUser | AnonymousUser | None,
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
) -> Submission:
    """Parse a bundle and store it as one Submission with its Kernels and one queued Evaluation per kernel.

    Everything is written in one transaction, and the `evaluator.evaluate_kernel` messages (queue
    `eval-<hardware>`) are sent only after it commits. Raises BundleError (with the per-file report) when nothing
    in the bundle can be evaluated or the bundle is unsafe; then nothing is stored.
    """
    problem_set = (problem_set or problem_set_default()).strip()
    hardware = (hardware or settings.EVALUATOR_DEFAULT_HARDWARE).strip().lower()
    if not HARDWARE_RE.match(hardware):
        raise BundleError(f"Invalid hardware label {hardware!r}: lowercase letters, digits, '.', '_' or '-'.")
    if not problem_set or len(problem_set) > 100:
        raise BundleError("Invalid problem set label.")
    if not Problem.objects.filter(problem_set=problem_set).exists():
        raise BundleError(unknown_problem_set_message(problem_set))

    bundle = parse_bundle(filename=filename, data=data, level=level, problem_id=problem_id, sample=sample)
    problems = _resolve_problems(bundle, problem_set)
    if not bundle.entries:
        raise BundleError("No kernel in the bundle matches a problem of this problem set.", bundle.report_dicts())

    with transaction.atomic():
        try:
            llm = llm_get_or_create(name=llm_name, organisation=organisation)
        except ValueError as exc:
            raise BundleError(str(exc), bundle.report_dicts()) from exc
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
    return submission


def _claims(bundle: ParsedBundle) -> dict[str, Any] | None:
    """The submitter's own claims (eval_results.json, leaderboard metadata), kept for comparison only."""
    claims: dict[str, Any] = {}
    if bundle.claimed_results:
        claims["eval_results"] = bundle.claimed_results
    if bundle.metadata:
        claims["metadata"] = bundle.metadata
    return claims or None


def submission_create_from_upload(
    *,
    uploader: AbstractBaseUser | AnonymousUser | None,
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
    """`submission_create` for an uploaded file (web form or API). Reads at most BUNDLE_MAX_BYTES + 1 bytes, so
    an oversized upload is refused without being read whole; blank optional fields mean the defaults."""
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
