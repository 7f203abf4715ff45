"""The candidate worker's Unix user (harness/sandbox/privileges.py): choosing it, handing files over and back, and,
when the tests run as root (CI), what a kernel running as that user can no longer write."""

from __future__ import annotations

import os
import pwd
import stat
import sys
from pathlib import Path

import pytest

from evaluator.harness.environ import worker_env
from evaluator.harness.sandbox import privileges
from evaluator.harness.sandbox.privileges import (
    FALLBACK_IDENTITY,
    UID_BASE,
    UID_SLOTS,
    UidLease,
    blocked_at,
    candidate_identity,
    check_runtime,
    open_path,
    parse_identity,
)
from evaluator.runner import run_evaluation

from .conftest import source

REPO = Path(__file__).resolve().parents[2]
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="only root can hand files to another user")
SANDBOX = candidate_identity() if ROOT else None  # `auto` without a lease: the stand-in 65534
needs_drop = pytest.mark.skipif(SANDBOX is None, reason="the candidate is dropped only when the evaluator is root")


# --- choosing the user ----------------------------------------------------------------------------------------------


def test_nothing_to_drop_when_not_root(monkeypatch):
    monkeypatch.setattr(privileges.os, "geteuid", lambda: 1000)
    assert candidate_identity({}) is None
    assert candidate_identity({"KBV_SANDBOX_USER": "nobody"}) is None


def test_identity_from_the_environment_when_root(monkeypatch):
    monkeypatch.setattr(privileges.os, "geteuid", lambda: 0)
    nobody = pwd.getpwnam("nobody")
    assert candidate_identity({}) == FALLBACK_IDENTITY  # `auto` (the default) without a lease
    assert candidate_identity({"KBV_SANDBOX_USER": "nobody"}) == (nobody.pw_uid, nobody.pw_gid)
    for off in ("off", "OFF", " off "):
        assert candidate_identity({"KBV_SANDBOX_USER": off}) is None
    assert candidate_identity({"KBV_SANDBOX_USER": "1234:5678"}) == (1234, 5678)
    assert candidate_identity({"KBV_SANDBOX_USER": "no-such-user-kbv"}) == FALLBACK_IDENTITY
    assert candidate_identity({"KBV_SANDBOX_USER": str(nobody.pw_uid)}) == (nobody.pw_uid, nobody.pw_gid)
    assert parse_identity("4242") == (4242, 4242)  # no passwd entry: the group of the same number


@pytest.mark.parametrize("value", ["root", "0", "0:0", "12x:3"])
def test_root_or_garbage_is_refused(value):
    with pytest.raises(ValueError):
        parse_identity(value)


# --- reaching and owning files --------------------------------------------------------------------------------------


def test_blocked_at_and_open_path(tmp_path):
    ident = (os.geteuid() + 4242, os.getegid() + 4242)  # a user that owns nothing here
    outer = tmp_path / "outer"
    inner = outer / "inner"
    inner.mkdir(parents=True)
    outer.chmod(0o700)
    inner.chmod(0o755)
    assert blocked_at(inner / "file", ident) in {outer, *outer.parents}
    changed = open_path(inner / "file", ident)
    assert outer in changed
    assert stat.S_IMODE(outer.stat().st_mode) == 0o701  # search only: no listing, no writing
    assert blocked_at(inner / "file", ident) is None
    assert open_path(inner / "file", ident) == []  # idempotent
    assert open_path(inner, None) == []


@needs_root
def test_check_runtime_fails_closed_with_a_reason(tmp_path):
    ident = (65534, 65534)
    assert check_runtime("/bin/true", None, env={}, cwd=tmp_path) is None
    hidden = tmp_path / "hidden"
    (hidden / "cand").mkdir(parents=True)
    hidden.chmod(0o700)
    why = check_runtime(sys.executable, ident, env=worker_env(private_dir=hidden / "cand"), cwd=hidden / "cand")
    assert why and "uid 65534" in why and "KBV_SANDBOX_USER=off" in why
    assert str(hidden) in why  # names the directory in the way


# --- a kernel running as the sandbox user ---------------------------------------------------------------------------

_INTRUDER = """
import os
import torch
import torch.nn as nn

TARGETS = __TARGETS__
here = os.getcwd()
TARGETS += [os.path.join(here, "..", "reference", "intruder.txt"), os.path.join(here, "..", "intruder.txt")]
written = []
for path in TARGETS:
    try:
        with open(path, "w") as fh:
            fh.write("intruder")
        written.append(path)
    except OSError:
        pass
if os.getuid() == 0:
    raise RuntimeError(f"uid {os.getuid()} wrote {written}")
# Writes that landed only in the sandbox's own private /tmp (namespaces.py) are no escape; the test looks for the
# files on the host.


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@needs_drop
@pytest.mark.slow  # starts the real harness
def test_kernel_cannot_write_outside_its_own_dir(tmp_path):
    cache = tmp_path / "cache"
    scratch = tmp_path / "scratch"  # a directory of the evaluator's user that the kernel can reach
    scratch.mkdir()
    scratch.chmod(0o755)
    targets = [
        str(cache / "intruder.txt"),  # the compile cache root: every kernel's builds
        str(scratch / "intruder.txt"),
        str(REPO / "intruder.txt"),
        str(REPO / "evaluator" / "harness" / "intruder.txt"),
    ]
    record = run_evaluation(
        problem_source=source("problem", "relu"),
        kernel_source=_INTRUDER.replace("__TARGETS__", repr(targets)),
        device="cpu",
        timeout=120,
        work_root=tmp_path / "work",
        compile_cache_dir=cache,
        options={"quick": True},
    )
    leftovers = [t for t in targets if Path(t).exists()] + [str(p) for p in (tmp_path / "work").rglob("intruder.txt")]
    for path in leftovers:
        Path(path).unlink()
    assert not leftovers
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    uid = record["environment"]["candidate_uid"]
    assert UID_BASE <= uid < UID_BASE + UID_SLOTS  # a uid of this evaluation's own
    assert record["environment"]["compile_cache"] == "miss"
    owners = {p.stat().st_uid for p in cache.rglob("*") if "triton" not in p.relative_to(cache).parts}
    orchestrator = record["environment"]["orchestrator"]["uid"]  # the cache is the orchestrators', never the kernel's
    assert owners == {orchestrator} and uid not in owners and orchestrator != 0, owners
    if record["environment"]["sandbox"] == "namespaces":  # the kernel never sees the cache: nothing of it there
        assert not list(cache.glob("*/build/triton"))
    else:
        assert {p.stat().st_uid for p in cache.glob("*/build/triton")} == {uid}  # Triton compiles at first call


def test_concurrent_leases_get_different_uids(tmp_path):
    first, second = UidLease(tmp_path / "slots"), UidLease(tmp_path / "slots")
    a, b = first.acquire(), second.acquire()
    assert a != b and all(UID_BASE <= ident[0] < UID_BASE + UID_SLOTS for ident in (a, b))
    first.release()
    third = UidLease(tmp_path / "slots")
    assert third.acquire() != b  # a held slot is never handed out twice
    second.release()
    third.release()
