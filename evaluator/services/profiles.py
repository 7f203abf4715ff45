"""Profiles on request: staff ask for a torch.profiler trace of one evaluation; a worker of the same
hardware evaluates the kernel again with the harness option `profile_dir`, which writes the Chrome traces of one
candidate call and one baseline call (the calls of "what ran", outside the timed calls) to VAR_DIR/profiles/<id>/.
The inspector lists the requests and serves the files to staff.

Nsight Compute (ncu) is not wired yet (README); a CPU evaluation has no device trace, so its request is answered
`unavailable` at once, with the reason.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluator import enqueue
from evaluator.models import Evaluation, ProfileRequest
from evaluator.selectors.profiles import profile_tool_unavailable
from evaluator.services.evaluations import harness_arguments
from evaluator.services.queues import queue_for

log = logging.getLogger(__name__)
ARTEFACTS = ("candidate-trace.json", "baseline-trace.json")


def profile_root() -> Path:
    return Path(settings.VAR_DIR) / "profiles"


def profile_folder(request: ProfileRequest) -> Path:
    return profile_root() / str(request.pk)


def profile_request_create(*, evaluation: Evaluation, user: Any, tool: str = "torch") -> ProfileRequest:
    """A staff request: queued for a worker of the evaluation's hardware, or unavailable with the reason."""
    reason = profile_tool_unavailable(evaluation, tool)
    request = ProfileRequest.objects.create(
        evaluation=evaluation,
        tool=tool,
        requested_by=user,
        status=ProfileRequest.Status.UNAVAILABLE if reason else ProfileRequest.Status.QUEUED,
        detail=reason,
        finished_at=timezone.now() if reason else None,
    )
    if not reason:
        profile_evaluation = enqueue.task(enqueue.PROFILE_EVALUATION)

        def send() -> None:
            try:
                profile_evaluation.apply_async(args=[request.pk], queue=queue_for(evaluation.hardware))
            except Exception as exc:  # the broker is down: say so on the request
                ProfileRequest.objects.filter(pk=request.pk).update(
                    status=ProfileRequest.Status.FAILED, detail=f"not sent: broker unreachable ({exc})"[:500]
                )

        transaction.on_commit(send)
    return request


def profile_run(*, request_id: int, run: Any = None) -> ProfileRequest | None:
    """Claim a queued request, evaluate the kernel again with traces on, and store what came back. `run` stands for
    `evaluator.runner.run_evaluation` (tests)."""
    if not ProfileRequest.objects.filter(pk=request_id, status=ProfileRequest.Status.QUEUED).update(
        status=ProfileRequest.Status.RUNNING
    ):
        return None
    request = ProfileRequest.objects.select_related("evaluation__kernel__problem").get(pk=request_id)
    folder = profile_folder(request)
    folder.mkdir(parents=True, exist_ok=True)
    if run is None:
        from evaluator.runner import run_evaluation as run
    arguments = harness_arguments(request.evaluation)
    # Fresh seeds: a profile is no verdict, and must not spend (or expose) the evaluation's committed ones.
    options = {k: v for k, v in arguments["options"].items() if k != "seeds"}
    arguments["options"] = {**options, "profile_dir": str(folder)}
    try:
        record = run(**arguments) or {}
    except Exception as exc:  # recorded on the request
        log.warning("profile %s failed: %s", request_id, exc)
        record, detail = {}, f"the harness failed: {exc}"[:500]
    else:
        detail = ""
    launched = record.get("launched_kernels")
    if not isinstance(launched, dict):
        launched = {}
    artefacts = [name for name in ARTEFACTS if (folder / name).is_file()]
    if not artefacts and not detail:
        detail = str(launched.get("error") or record.get("error") or "no trace was written (the kernel was not timed)")
    ProfileRequest.objects.filter(pk=request_id).update(
        status=ProfileRequest.Status.DONE if artefacts else ProfileRequest.Status.FAILED,
        artefacts=artefacts,
        detail=detail[:500],
        finished_at=timezone.now(),
    )
    request.refresh_from_db()
    return request


def profile_artefact(request: ProfileRequest, name: str) -> Path | None:
    """The stored file `name` of a request, only if it is one of its artefacts."""
    if name not in ARTEFACTS or name not in (request.artefacts or []):
        return None
    path = profile_folder(request) / name
    return path if path.is_file() else None
