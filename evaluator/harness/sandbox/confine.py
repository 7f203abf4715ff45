"""What the orchestrator runs with, and the network namespace the launcher gives an evaluation. stdlib only.

Where root runs the evaluator, the orchestrator (the process that reads the workers' replies, copies build products
and writes the record) holds no privilege at all: the launcher (sandbox/launcher/) starts it as a uid of its own,
with an empty capability bounding set and no_new_privs, in the evaluation's network namespace (a loopback that is
down: the database, the broker and every other host service are unreachable from the orchestrator and the workers,
whatever a bug in them did; they talk to the runner through inherited pipes only). `KBV_CONFINE=off` leaves the
evaluation in the host's network (a GPU driver that needs more, say); the uid and the capabilities are dropped all
the same. `report` reads back what this process runs with, for the record's `environment.orchestrator`.
"""

from __future__ import annotations

import ctypes
import os
import socket

ENV_VAR = "KBV_CONFINE"
MODE_VAR = "KBV_LAUNCHER_MODE"  # set by the launcher for the orchestrator: "privileged" or "same user"
CLONE_NEWNET = 0x40000000
CAP_NAMES = {0: "CAP_CHOWN", 1: "CAP_DAC_OVERRIDE", 3: "CAP_FOWNER", 5: "CAP_KILL", 6: "CAP_SETGID",
             7: "CAP_SETUID", 14: "CAP_IPC_LOCK", 21: "CAP_SYS_ADMIN", 23: "CAP_SYS_NICE"}  # fmt: skip
LAST_CAP = 63


def wanted(environ: dict[str, str] | None = None) -> bool:
    """Whether the evaluation gets a network namespace of its own (root only: KBV_CONFINE is not "off")."""
    env = os.environ if environ is None else environ
    return os.geteuid() == 0 and env.get(ENV_VAR, "on").strip().lower() != "off"


def private_network() -> None:
    """This process (and what it starts) in a network namespace of its own: only a loopback, down."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNET): {os.strerror(err)}")


def report() -> dict[str, object]:
    """What this process runs with (read back, for the record): its uid, its effective capabilities by name, the
    network interfaces it sees, whether no_new_privs is set, and the launcher's mode."""
    status = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                status[key] = value.strip()
    except OSError:
        return {"confined": False}
    effective = int(status.get("CapEff", "0"), 16)
    caps = sorted(CAP_NAMES.get(bit, f"cap{bit}") for bit in range(LAST_CAP + 1) if effective >> bit & 1)
    try:
        interfaces = sorted(name for _, name in socket.if_nameindex())
    except OSError:
        interfaces = []
    return {
        "uid": os.geteuid(),
        "capabilities": caps if len(caps) <= len(CAP_NAMES) else "all",
        "network_interfaces": interfaces,
        "no_new_privs": status.get("NoNewPrivs") == "1",
        "launcher": os.environ.get(MODE_VAR, "none"),
    }
