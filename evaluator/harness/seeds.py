"""Commit, then reveal: every secret seed of one evaluation derives from one master seed.

The orchestrator draws a 256-bit master seed per evaluation (or takes the one a reproduction names through the
`seeds` option) and derives each trial's seed from it and the trial's label with HMAC-SHA256, so the correctness
gate's inputs depend only on the master and the trial, not on how many seeds were drawn before. The record carries
`seeds_digest` = sha256 of the master's hex text: published with the verdict, it proves the seeds were fixed before
anyone could see them. The master itself leaves the harness only in the record's `seeds_master` key, which the
site takes out and keeps server-side until it reveals it (evaluator.services.seeds). stdlib only.
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
