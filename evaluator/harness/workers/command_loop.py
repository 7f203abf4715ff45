"""A worker's command loop: JSON-line commands (commands.py) in on one pipe, one JSON-line answer each out on the
other, until "exit". stdlib only.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from evaluator.harness.commands import Command

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def short_exception(exc: BaseException, limit: int = 1500) -> str:
    """The exception's last frames and message, cut to head and tail."""
    message = f"{type(exc).__name__}: {exc}".strip()
    if len(message) > limit // 2:
        message = message[: limit // 4] + " [...] " + message[-limit // 4 :]
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-3)).strip()
    if len(frames) > limit // 2:
        frames = "[...]" + frames[-limit // 2 :]
    return f"{message}\n{frames}" if frames else message


def serve(handlers: dict[Command, Handler]) -> None:
    """Read JSON-line commands from fd argv[1], answer on fd argv[2], until "exit"."""
    cmd_fd, rep_fd = int(sys.argv[1]), int(sys.argv[2])
    reader = os.fdopen(cmd_fd, "rb", buffering=0)
    buffer = b""
    while True:
        while b"\n" not in buffer:
            chunk = reader.read(1 << 16)
            if not chunk:
                os._exit(0)
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        message = json.loads(line)
        cmd = message.get("cmd")
        if cmd == Command.EXIT:
            os._exit(0)
        try:
            reply = handlers[cmd](message)
            reply.setdefault("ok", True)
        except Exception as exc:  # every failure becomes an answer, never a dead worker
            reply = {"ok": False, "error": short_exception(exc), "exc_type": type(exc).__name__}
        data = (json.dumps(reply, default=str) + "\n").encode()
        while data:
            written = os.write(rep_fd, data)
            data = data[written:]
