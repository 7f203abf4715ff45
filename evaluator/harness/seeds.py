"""Commit, then reveal: every secret seed of one evaluation derives from one master seed.

The site draws each evaluation's 256-bit master seed (`draw`) when it queues the evaluation, keeps it
server-side and publishes `digest(master)` (sha256 of the master's hex text) at once, before any worker claims the
evaluation; the worker hands the master to the harness through the `seeds` option (a standby harness receives it
with its "go" line). The orchestrator derives each trial's seed from the master and the trial's label with
HMAC-SHA256, so the correctness gate's inputs depend only on the master and the trial, not on how many seeds were
drawn before. The record carries `seeds_digest`, and the site refuses a record whose digest is not the one it
published before the run: the seeds were fixed before the kernel ran, and a run with other seeds cannot stand in
for it. Without the option (a command-line run, or an evaluation queued before the site published digests at
queue time) the orchestrator draws the master itself and the digest is only published with the verdict. The
master leaves the harness only in the record's `seeds_master` key, which the site takes out; it is revealed later
(evaluator.services.seeds), and a reproduction passes it back through the same option. stdlib only.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

SCHEME = "hmac-sha256-v1"  # how seeds derive from the master; a reproduction must use the same
RECORD_KEY = "seeds_master"  # the record key the master travels in, from the harness to the site only
_HEX = re.compile(r"^[0-9a-f]{64}$")


def draw() -> str:
    """A fresh master seed: 64 lowercase hex digits from the system's CSPRNG."""
    return secrets.token_hex(32)


def check(master: str) -> str:
    """`master` if it is one (64 hex digits, any case), lower-cased; ValueError otherwise."""
    text = master.strip().lower()
    if not _HEX.match(text):
        raise ValueError("a master seed is 64 hexadecimal digits")
    return text


def derive(master: str, label: str) -> int:
    """The 62-bit seed of one labelled draw ("S0", "D2_1", "params", "n7" ...): knowing some of them tells
    nothing about the master or the others."""
    mac = hmac.new(bytes.fromhex(master), label.encode(), hashlib.sha256).digest()
    return int.from_bytes(mac[:8], "big") >> 2


def digest(master: str) -> str:
    """The public commitment to `master`: `printf %s MASTER | sha256sum`."""
    return hashlib.sha256(master.encode("ascii")).hexdigest()
