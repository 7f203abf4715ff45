"""The zygote: the one long-lived process of the launcher. It holds nothing but its socket; for each START it
receives (one datagram with the runner's descriptors, and the sender's uid as the kernel reports it) it forks a
child that becomes that evaluation's launcher (evaluation.py), and reaps the children that end. It reads no other
message, and a message it cannot use closes its descriptors: the runner sees its life socket end. stdlib only.

The runner starts one per process where it is root (or where no root is at hand: then the launcher holds no
privilege either); a Celery worker started as root starts one before it drops to its service user
(evaluator/service_user.py), and its pool processes share it (each START brings its own life socket).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket

from evaluator.harness.sandbox.launcher import wire
from evaluator.harness.sandbox.launcher.evaluation import Evaluation


def serve(sock: socket.socket) -> None:
    """Answer START requests until every holder of the other end has closed it."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the runner; its end of file is ours
    while True:
        _reap()
        ready, _, _ = select.select([sock], [], [], 1.0)
        if not ready:
            continue
        try:
            message = wire.receive(sock, ["START"], credentials=True)
        except (wire.Malformed, OSError):
            continue
        if message is None:
            return
        if message.uid is None or (os.geteuid() != 0 and message.uid != os.geteuid()):
            _close(message.fds)  # a sender the kernel does not name; a stranger to an unprivileged zygote
            continue
        if os.fork() == 0:  # the evaluation's launcher: never back into this loop, whatever happens
            code = 70
            try:
                sock.close()
                code = run_one(message)
            finally:
                os._exit(code)
        _close(message.fds)


def run_one(message: wire.Message) -> int:
    """In the forked child: set the evaluation up, start its orchestrator, serve it, tear it down. The runner hears
    STARTED or FAILED, then EXITED, on its life socket (the third descriptor)."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    assert message.uid is not None  # serve() passes no message without its sender
    fds = message.fds
    life = socket.socket(fileno=fds[2])
    evaluation = None
    try:
        evaluation = Evaluation(message, peer=message.uid)
        evaluation.setup()
        evaluation.launch([fds[0], fds[1], *fds[3:]])
    except Exception as exc:  # whatever stopped the set-up, the runner hears it (FAILED), and nothing is left
        if evaluation is not None:
            with contextlib.suppress(Exception):
                evaluation.teardown()
        with contextlib.suppress(OSError):
            reason = "".join(c if c.isprintable() else " " for c in f"{exc}")[:500]
            wire.send(life, "FAILED", reason=reason or type(exc).__name__)
        return 1
    status = -1
    try:
        wire.send(life, "STARTED", pid=os.getpid())
        evaluation.serve(life)
    finally:
        status = evaluation.teardown()
        with contextlib.suppress(OSError):
            wire.send(life, "EXITED", status=status)
    return 0


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
