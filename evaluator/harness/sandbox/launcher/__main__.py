"""`python -m evaluator.harness.sandbox.launcher --listen FD`: the zygote (zygote.py) on the socket FD."""

from __future__ import annotations

import os
import socket
import sys

from evaluator.harness.sandbox.launcher.zygote import serve


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "--listen" or not argv[1].isdigit():
        print("usage: python -m evaluator.harness.sandbox.launcher --listen FD", file=sys.stderr)
        return 2
    if os.fork():  # the caller reaps this one at once; the zygote is nobody's child (no caller counts it as its own)
        os._exit(0)
    os.environ.clear()  # the caller's (a Celery worker's, before its drop): nothing of it reaches an evaluation
    os.environ["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    os.chdir("/")
    serve(socket.socket(fileno=int(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
