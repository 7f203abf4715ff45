"""The launcher (evaluator/harness/sandbox/launcher/): a few fixed requests, every field checked, anything else refused;
a caller that is not root gets nothing of root's; and it stays small, importing nothing that parses what a worker
writes. The requests are answered by the launcher's own code (Evaluation.answer) over a real socket pair; the START
refusals by a real zygote."""

from __future__ import annotations

import ast
import io
import os
import socket
import struct
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from evaluator.harness.protocol import Options
from evaluator.harness.sandbox import launching
from evaluator.harness.sandbox.launcher import wire
from evaluator.harness.sandbox.launcher.evaluation import Evaluation

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "evaluator" / "harness" / "sandbox" / "launcher"
ROOT = os.geteuid() == 0


def _start_values(folder: str, **changes: object) -> dict[str, object]:
    request = launching.Request(work=folder, python=sys.executable, cuda=False, limits=launching.limits(Options(), 60))
    return {**request.fields(standby=False), **changes}


# --- the wire: every field of its type, every message of its length ------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        ("WAIT", {"role": 2}),  # a role is reference (0) or candidate (1)
        ("BUILD", {"fresh": 7}),  # a flag is 0 or 1
        ("START", {"work": "relative/path"}),  # paths are absolute
        ("START", {"work": "/tmp/../etc"}),  # with no `..`
        ("START", {"python": "/usr/bin/python\n--evil"}),  # and no control characters
        ("START", {"memory": 1 << 60}),  # numbers within range
        ("START", {"env": "PATH=/bin\nX"}),  # environment entries are plain
        ("START", {"user": "x" * 100}),  # text fits its field
    ],
)
def test_a_field_out_of_its_type_is_refused_both_ways(kind, values):
    fields = _start_values("/tmp/x", **values) if kind == "START" else values
    with pytest.raises(wire.Malformed):
        wire.encode(kind, **fields)
    spec = wire.KINDS[kind]  # the same value packed by hand, past encode()'s own check
    packed = []
    for name, type_name in spec.fields:
        value = fields[name]
        if isinstance(value, str) and len(value.encode()) >= int(wire.TYPES[type_name][0][:-1]):
            return  # does not fit its field: not even representable in the message
        packed.append(value.encode() if isinstance(value, str) else value)
    try:
        forged = wire._HEAD.pack(wire.MAGIC, spec.code) + spec.layout.pack(*packed)
    except struct.error:
        return  # not even representable in the message's layout
    with pytest.raises(wire.Malformed):
        wire.decode(forged, [kind], spec.fds[0])


def test_messages_of_the_wrong_length_kind_or_descriptor_count_are_refused():
    wait = wire.encode("WAIT", role=1)
    for data, expected, nfds in [
        (wait + b"\0", ["WAIT"], 0),  # one byte too long
        (wait[:-1], ["WAIT"], 0),  # one byte short
        (b"XXXX" + wait[4:], ["WAIT"], 0),  # not our magic
        (wait, ["PIN"], 0),  # a kind not expected here
        (wire.encode("HELLO"), ["HELLO"], 1),  # a descriptor HELLO does not carry
        (b"\xff" * 6, list(wire.KINDS), 0),  # an unknown kind
        (b"", ["HELLO"], 0),
    ]:
        with pytest.raises(wire.Malformed):
            wire.decode(data, expected, nfds)
    assert wire.decode(wait, ["WAIT"], 0).values == {"role": 1}


# --- the launcher's answers -----------------------------------------------------------------------------------------


@pytest.fixture
def launcher(tmp_path):
    """The launcher's request handling over a real socket pair (no evaluation set up: no pair, no folders)."""
    start = wire.decode(wire.encode("START", **_start_values(str(tmp_path))), ["START"], 3)
    evaluation = Evaluation(start, peer=os.geteuid())
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    evaluation.sock = theirs
    yield evaluation, ours
    ours.close()
    theirs.close()


def _answer(evaluation: Evaluation, sock: socket.socket, data: bytes, fds: list[int] = ()) -> wire.Message:
    socket.send_fds(sock, [data], list(fds))
    assert evaluation.answer() is True
    reply = wire.receive(sock, list(wire.KINDS))
    assert reply is not None
    return reply


def test_the_launcher_refuses_malformed_unknown_and_out_of_place_requests(launcher, tmp_path):
    evaluation, sock = launcher
    spare = os.open(tmp_path, os.O_RDONLY)
    cases = [
        (b"garbage", []),  # not a message
        (wire.encode("WAIT", role=0)[:-1], []),  # cut short
        (wire.encode("STARTED", pid=1), []),  # a kind the launcher never takes from the orchestrator
        (wire.encode("START", **_start_values("/tmp")), []),  # nor a START: that is the runner's, to the zygote
        (wire._HEAD.pack(wire.MAGIC, 99), []),  # a kind that does not exist
        (wire.encode("HELLO"), [spare]),  # a descriptor where none belongs (closed, never used)
        (wire.encode("WAIT", role=1), []),  # no worker pair to ask about
        (wire.encode("KILL", role=0), []),
        (wire.encode("END_PAIR"), []),
        (wire.encode("PIN", cpu=0), []),
    ]
    for data, fds in cases:
        reply = _answer(evaluation, sock, data, fds)
        assert reply.kind == "REFUSED", (data[:12], reply)
    with pytest.raises(OSError):
        os.fstat(spare + 1000)  # nothing new was left open for it
    assert evaluation.refusals == len(cases)


def test_a_pin_onto_a_cpu_that_is_not_the_launchers_is_refused(launcher):
    evaluation, sock = launcher
    evaluation.pair = type("Pair", (), {"workers": [None, None]})()  # past the pair check: the CPU is refused
    reply = _answer(evaluation, sock, wire.encode("PIN", cpu=4095))
    assert reply.kind == "REFUSED" and "not one of ours" in reply["reason"]


# --- START, as the zygote sees it -----------------------------------------------------------------------------------


def _start(values: dict[str, object]) -> str:
    """Send one START to a fresh zygote and return the launcher's answer (or why there was none)."""
    zygote = launching.start_zygote()
    life, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    read_fd, write_fd = os.pipe()
    log = os.open(os.devnull, os.O_WRONLY)
    try:
        wire.send(zygote, "START", [write_fd, log, theirs.fileno()], **values)
        theirs.close()
        life.settimeout(120)
        reply = wire.receive(life, ["STARTED", "FAILED"])
        return "no answer" if reply is None else f"{reply.kind}: {reply.values}"
    finally:
        for fd in (read_fd, write_fd, log):
            os.close(fd)
        life.close()
        zygote.close()


def test_a_start_naming_a_variable_off_the_allow_list_is_refused(tmp_path):
    work = tmp_path / "eval"
    work.mkdir()
    answer = _start(_start_values(str(work), env="SECRET_KEY=leak\0PATH=/bin"))
    assert answer.startswith("FAILED") and "SECRET_KEY" in answer, answer


def _as_nobody(zygote: socket.socket, values: dict[str, object]) -> str:
    """Send START from a child that is uid 65534 (as the app's service user is), to our zygote (root's)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            life, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            channel = os.open(os.devnull, os.O_WRONLY)
            wire.send(zygote, "START", [channel, channel, theirs.fileno()], **values)
            theirs.close()
            life.settimeout(120)
            reply = wire.receive(life, ["STARTED", "FAILED"])
            os.write(write_fd, ("no answer" if reply is None else f"{reply.kind}: {reply.values}").encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        answer = fh.read().decode()
    os.waitpid(pid, 0)
    return answer


@pytest.mark.skipif(not ROOT, reason="a caller that is not root, to a root launcher")
def test_a_caller_that_is_not_root_gets_nothing_of_roots(tmp_path):
    """The app's user may not name a folder of root's (the launcher would make folders in it and mount there), nor
    ask for its kernels to run as root."""
    roots, theirs = tmp_path / "roots", tmp_path / "nobodys"
    roots.mkdir()
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    zygote = launching.start_zygote()
    try:
        folder = _as_nobody(zygote, _start_values(str(roots)))
        as_root = _as_nobody(zygote, _start_values(str(theirs), user="off"))
    finally:
        zygote.close()
    assert folder.startswith("FAILED") and "not a folder of the caller's own" in folder, folder
    assert as_root.startswith("FAILED") and "KBV_SANDBOX_USER=off" in as_root, as_root
    assert not list(roots.iterdir()), "the launcher made something in a folder of root's"


# --- small, and nothing that reads a worker's words -----------------------------------------------------------------

# Code lines (not blank, not comments, not docstrings). The harness is about 8,000 of them; what the launcher's
# process runs (its package and the sandbox modules it imports) must stay well under a quarter of that, and none of
# it is the orchestrator's or a worker's (they read what the kernel writes: replies, outputs, build products).
BUDGET_LAUNCHER = 900  # sandbox/launcher/
BUDGET_PRIVILEGED = 1900  # ... and every harness module the launcher's process imports
ALLOWED = {
    "evaluator.harness.environ",
    *(
        f"evaluator.harness.sandbox.{m}"
        for m in (
            "beneath",
            "candidate_cpu",
            "cgroup",
            "confine",
            "cpu_pin",
            "disk",
            "hardening",
            "namespaces",
            "privileges",
            "usage",
        )
    ),  # fmt: skip
}


def code_lines(path: Path) -> int:
    """Lines holding code: not blank, not a comment alone, not part of a docstring."""
    source = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):  # fmt: skip
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def test_the_launcher_is_small_and_imports_nothing_that_reads_a_workers_words():
    code = (
        "import sys\n"
        "import evaluator.harness.sandbox.launcher.__main__\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('evaluator') or m in ('json', 'torch'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "json" not in loaded and "torch" not in loaded, "the launcher's process parses JSON or loads torch"
    harness = {m for m in loaded if m.startswith("evaluator.harness.") and ".launcher" not in m}
    assert harness - {"evaluator.harness.sandbox"} <= ALLOWED, sorted(harness - ALLOWED)
    own = sum(code_lines(path) for path in LAUNCHER.glob("*.py"))
    assert own <= BUDGET_LAUNCHER, f"the launcher is {own} code lines, over its budget of {BUDGET_LAUNCHER}"
    imported = sum(code_lines(REPO / (m.replace(".", "/") + ".py")) for m in harness if m in ALLOWED)
    assert own + imported <= BUDGET_PRIVILEGED, f"the launcher's process runs {own + imported} lines of ours"
    everything = sum(code_lines(path) for path in (REPO / "evaluator" / "harness").rglob("*.py"))
    assert own + imported < everything / 4, (own + imported, everything)
