"""What the orchestrator may do when the evaluator is root: the few capabilities it uses, no network, no way back to
full root. stdlib only; `confine()` runs in the harness process between fork and exec (the runner's preexec).

The orchestrator starts the kernel as a uid of its own, hands it its folders, puts its processes in a cgroup, pins
and kills them. For that it keeps CAP_SETUID/SETGID (the kernel's uid), CAP_CHOWN/FOWNER (its folders),
CAP_DAC_OVERRIDE (its folders are 0700 and its own), CAP_KILL, CAP_SYS_NICE (pinning its threads) and CAP_IPC_LOCK
(pinned host memory). Everything else is dropped from the bounding set, so no program it runs can get it back:
no mounts, no ptrace, no raw network, no module loading. `SECBIT_NOROOT` (locked) keeps an execve by uid 0 from
regaining full capabilities; the kept ones pass to the reference worker as ambient capabilities, and the kernel's
worker, started as another uid, loses them all. `no_new_privs` keeps set-uid programs from raising any.

It also gets a network namespace of its own with only a loopback that is down: the database, the broker and every
other service on the host are unreachable from the harness whatever a bug in it did (it talks to the runner through
inherited pipes only). `KBV_CONFINE=off` turns this off (a GPU driver that needs more, say); the record's
`environment.orchestrator` says what the orchestrator ran with.
"""

from __future__ import annotations

import ctypes
import os

ENV_VAR = "KBV_CONFINE"
CLONE_NEWNET = 0x40000000
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1
CAPS = {
    "CAP_CHOWN": 0,
    "CAP_DAC_OVERRIDE": 1,
    "CAP_FOWNER": 3,
    "CAP_KILL": 5,
    "CAP_SETGID": 6,
    "CAP_SETUID": 7,
    "CAP_IPC_LOCK": 14,
    "CAP_SYS_NICE": 23,
}
KEEP = frozenset(CAPS.values())
LAST_CAP = 63
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def wanted(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return os.geteuid() == 0 and env.get(ENV_VAR, "on").strip().lower() != "off"


def confine() -> None:
    """Between fork and exec, as root: own network namespace, capabilities cut to KEEP for good. Only system calls
    (no allocation-heavy Python), so it is safe in a forked child of a threaded process. Raises OSError on failure
    (the spawn fails: never a harness with more than it should have)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, what: str) -> None:
        if result != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"confine: {what}: {os.strerror(err)}")

    check(libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    check(libc.prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0), "securebits")
    for cap in range(LAST_CAP + 1):
        if cap not in KEEP and libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            check(-1, f"drop capability {cap}")  # EINVAL: past the kernel's last capability
    mask = sum(1 << cap for cap in KEEP)
    header = _Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)(_Data(mask, mask, mask), _Data(0, 0, 0))
    check(libc.capset(ctypes.byref(header), data), "capset")
    for cap in sorted(KEEP):
        check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0), f"ambient capability {cap}")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def report() -> dict[str, object]:
    """What this process runs with (read back, for the record): effective capabilities by name, whether it has any
    network interface besides a loopback, and whether no_new_privs is set."""
    status = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                status[key] = value.strip()
    except OSError:
        return {"confined": False}
    effective = int(status.get("CapEff", "0"), 16)
    names = {bit: name for name, bit in CAPS.items()}
    caps = sorted(names.get(bit, f"cap{bit}") for bit in range(LAST_CAP + 1) if effective >> bit & 1)
    try:
        interfaces = sorted(name for _, name in __import__("socket").if_nameindex())
    except OSError:
        interfaces = []
    return {
        "uid": os.geteuid(),
        "capabilities": caps if len(caps) <= len(CAPS) else "all",
        "network_interfaces": interfaces,
        "no_new_privs": status.get("NoNewPrivs") == "1",
    }
