"""The two ways an evaluation stops early. stdlib only.

They are told apart because they end differently: a `CandidateFailed` is the kernel's doing and still yields a
result record (status and error from the exception), a `HarnessInfraError` is ours and yields none (the runner
retries it as an infrastructure fault).
"""

from __future__ import annotations


class HarnessInfraError(Exception):
    """The evaluation could not be carried out for reasons that are not the candidate's fault."""


class CandidateFailed(Exception):
    """The candidate cannot go on (compile error, crash, timeout...).

    `status` is the record's status for it; None when whoever raised it has already written the record (a
    compile-only run stops this way with status "ok").
    """

    def __init__(self, error: str, status: str | None = None) -> None:
        super().__init__(error)
        self.status = status
