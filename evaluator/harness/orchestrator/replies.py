"""What the orchestrator accepts as a candidate worker's reply (docs/protocol.md section 7a): the kernel shares its
process with the worker and can write a line of its own on the reply pipe, so a reply that lacks what the worker
sends, or has it of another type, is the kernel's doing and rejects it. stdlib only, like the orchestrator.
"""

from __future__ import annotations

from typing import Any

from evaluator.harness.commands import Command
from evaluator.harness.errors import CandidateFailed

Reply = dict[str, Any]

# What the orchestrator reads of each candidate reply, with its type. The kernel shares its process with the worker
# and can write a line of its own on the reply pipe: a reply that lacks one of these, or has it of another type, is
# the kernel's doing and rejects it (a key read later that is missing does too: CandidateReply), never a crash of ours.
_NUMBER = (int, float)
CANDIDATE_REPLY_FIELDS: dict[Command, dict[str, type | tuple[type, ...]]] = {
    Command.LOAD: {"compile_s": _NUMBER, "state": list},
    Command.LOAD_PARAMS: {"loaded": int},
    Command.RUN: {"plain": bool, "inputs_unchanged": bool},
    Command.TIME_BLOCK: {"times": list, "walls": list},
    Command.TIME_FRESH: {"times": list, "walls": list},
    Command.SAVE_KEPT: {"saved": (dict, list)},
    Command.INTEGRITY: {"tampered": list, "threads": list},
    Command.LAUNCHED_KERNELS: {"events": (list, type(None))},
}


class MalformedReply(CandidateFailed):
    """The candidate's reply is not what its worker sends: the kernel wrote on the reply pipe."""

    def __init__(self, cmd: str, what: str) -> None:
        super().__init__(
            f"rejected: the candidate's reply to {cmd} is malformed ({what}); a kernel must not write on the "
            "harness's reply channel",
            "rejected",
        )


class CandidateReply(dict[str, Any]):
    """A candidate reply: reading a key it lacks rejects the kernel instead of raising KeyError in the harness."""

    cmd = ""

    def __missing__(self, key: str) -> Any:
        raise MalformedReply(self.cmd, f"no {key!r}")


def check_reply(cmd: Command, reply: Reply) -> CandidateReply:
    for key, kind in CANDIDATE_REPLY_FIELDS.get(cmd, {}).items():
        if key not in reply:
            raise MalformedReply(cmd, f"no {key!r}")
        value = reply[key]
        if not isinstance(value, kind) or (kind is _NUMBER and isinstance(value, bool)):
            raise MalformedReply(cmd, f"{key!r} is a {type(value).__name__}")
    typed = CandidateReply(reply)
    typed.cmd = str(cmd)
    return typed
