"""The launcher's wire: the only messages that cross into or out of the privileged launcher, and the only parser
it runs on bytes another process wrote. stdlib only (no json: nothing here reads a free-form document).

Every message is one datagram on a SOCK_SEQPACKET socket (never split, never merged): a magic, a kind, then a body
of one fixed layout per kind (struct), so a message of the wrong length is refused before a field is read. Every
field has a type that says what it may hold (a flag is 0 or 1, a role is reference or candidate, a path is absolute
text without control characters or `..`, a number is within range); `decode` checks them all, and a kind the
receiver does not expect in its position is refused like a malformed one. Descriptors travel beside a message
(SCM_RIGHTS): how many each kind carries is fixed too. The launcher answers what it refuses with REFUSED.
"""

from __future__ import annotations

import array
import os
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

MAGIC = b"KBV1"
_HEAD = struct.Struct("<4sH")
MAX_FDS = 12


class Malformed(ValueError):
    """Bytes that are no message of the kind expected: the launcher refuses them."""


def _plain(value: Any) -> bool:
    return isinstance(value, str) and not any(ord(c) < 32 or ord(c) == 127 for c in value)


def _path(value: Any) -> bool:
    """Empty (none given) or absolute, plain, with no `..` component."""
    return _plain(value) and (not value or (value.startswith("/") and "/../" not in f"{value}/"))


def _env(value: Any) -> bool:
    """NAME=VALUE entries separated by NUL, each plain (which names may cross is the launcher's to check)."""
    return isinstance(value, str) and all(_plain(e) and "=" in e[1:] for e in value.split("\0") if e)


TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "flag": ("B", lambda v: v in (0, 1)),
    "role": ("B", lambda v: v in (0, 1)),  # 0: the reference worker, 1: the candidate worker
    "u16": ("H", lambda v: True),
    "u32": ("I", lambda v: True),
    "i32": ("i", lambda v: True),
    "u64": ("Q", lambda v: v < 1 << 48),
    "path": ("1024s", _path),
    "name": ("64s", _plain),
    "line": ("512s", _plain),
    "env": ("4096s", _env),
}


@dataclass(frozen=True)
class Kind:
    code: int
    fields: tuple[tuple[str, str], ...] = ()  # (name, type in TYPES)
    fds: tuple[int, int] = (0, 0)  # fewest and most descriptors beside it
    layout: struct.Struct = field(init=False)

    def __post_init__(self) -> None:
        fmt = "<" + "".join(TYPES[kind][0] for _, kind in self.fields)
        object.__setattr__(self, "layout", struct.Struct(fmt))


# fmt: off
LIMITS = (("memory", "u64"), ("fsize", "u64"), ("cpu_seconds", "u64"), ("work_bytes", "u64"), ("work_files", "u64"),
          ("tmp_bytes", "u64"), ("tmp_files", "u64"))
KINDS: dict[str, Kind] = {
    # the runner -> the zygote: one evaluation. Descriptors: its channel, its log, its life socket, [its go pipe]
    "START": Kind(1, (("work", "path"), ("python", "path"), ("cache", "path"), ("gpu_locks", "path"),
                      ("profile", "path"), ("bwrap", "path"), ("user", "name"), ("mode", "name"), ("env", "env"),
                      ("cuda", "flag"), ("require", "flag"), ("confine", "flag"), ("standby", "flag"),
                      ("keep", "flag"), *LIMITS), (3, 4)),
    # the launcher -> the runner, on the life socket
    "STARTED": Kind(2, (("pid", "u32"),)),
    "FAILED": Kind(3, (("reason", "line"),)),
    "EXITED": Kind(4, (("status", "i32"),)),  # the orchestrator's exit code (minus its signal; -1: unknown)
    # the orchestrator -> the launcher
    "HELLO": Kind(10),
    "PAIR": Kind(11),
    "WAIT": Kind(12, (("role", "role"),)),
    "KILL": Kind(13, (("role", "role"),)),
    "END_PAIR": Kind(14),
    "BUILD": Kind(15, (("fresh", "flag"),)),
    "PIN": Kind(16, (("cpu", "u16"),)),
    "UNPIN": Kind(17),  # back onto the CPUs outside timed loops (cpu_pin.general_cpus)
    # the launcher -> the orchestrator
    "SETUP": Kind(20, (("mode", "name"), ("reason", "line"), ("cand_uid", "i32"), ("cand_gid", "i32"),
                       ("launcher_pid", "u32"), ("privileged", "flag"), ("mounted", "flag"), ("cache", "flag"),
                       *LIMITS), (2, 3)),  # descriptors: the work disk, the tmp disk, [the cache]
    "PAIRED": Kind(21, (("ref_pid", "u32"), ("cand_pid", "u32"), ("handover_fd", "i32"), ("cgroup", "line"),
                        ("ref_cgroup", "line"), ("cand_cgroup", "line"), ("nproc", "u64")), (8, 8)),
    "STATUS": Kind(22, (("exited", "flag"), ("status", "i32"))),
    "STRAYS": Kind(23, (("count", "u32"),)),
    "FD": Kind(24, (), (1, 1)),
    "PINNED": Kind(25, (("reference", "u32"), ("candidate", "u32"))),
    "DONE": Kind(26),
    "REFUSED": Kind(27, (("reason", "line"),)),
}
# fmt: on
BY_CODE = {kind.code: name for name, kind in KINDS.items()}


@dataclass
class Message:
    kind: str
    values: dict[str, Any]
    fds: list[int] = field(default_factory=list)
    uid: int | None = None  # the sender's, as the operating system reports it (SCM_CREDENTIALS), where asked for

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def encode(kind: str, **values: Any) -> bytes:
    spec = KINDS[kind]
    packed = []
    for name, type_name in spec.fields:
        value = values.pop(name)
        if not TYPES[type_name][1](value):
            raise Malformed(f"{kind}.{name}: {value!r:.80} is not a {type_name}")
        if isinstance(value, str):
            value = value.encode()
            if len(value) >= int(TYPES[type_name][0][:-1]):
                raise Malformed(f"{kind}.{name}: too long")
        packed.append(value)
    if values:
        raise Malformed(f"{kind}: no field {sorted(values)}")
    return _HEAD.pack(MAGIC, spec.code) + spec.layout.pack(*packed)


def decode(data: bytes, expected: Sequence[str], nfds: int) -> Message:
    """The message in `data` if it is one of the `expected` kinds, whole, with every field of its type and the
    descriptor count its kind carries; Malformed otherwise."""
    if len(data) < _HEAD.size:
        raise Malformed("shorter than a header")
    magic, code = _HEAD.unpack_from(data)
    name = BY_CODE.get(code)
    if magic != MAGIC or name is None or name not in expected:
        raise Malformed(f"not an expected message (kind {code})")
    spec = KINDS[name]
    if len(data) != _HEAD.size + spec.layout.size:
        raise Malformed(f"{name}: {len(data)} bytes, not {_HEAD.size + spec.layout.size}")
    if not spec.fds[0] <= nfds <= spec.fds[1]:
        raise Malformed(f"{name}: {nfds} descriptors")
    values: dict[str, Any] = {}
    for (fname, type_name), raw in zip(spec.fields, spec.layout.unpack_from(data, _HEAD.size), strict=True):
        if isinstance(raw, bytes):
            text = raw.rstrip(b"\0")  # the padding; a NUL inside is refused below (but between env entries)
            try:
                raw = text.decode()
            except UnicodeDecodeError as exc:
                raise Malformed(f"{name}.{fname}: not UTF-8") from exc
        if not TYPES[type_name][1](raw) or (type_name != "env" and isinstance(raw, str) and "\0" in raw):
            raise Malformed(f"{name}.{fname}: not a {type_name}")
        values[fname] = raw
    return Message(name, values)


def send(sock: socket.socket, kind: str, fds: Sequence[int] = (), **values: Any) -> None:
    data = encode(kind, **values)
    if not KINDS[kind].fds[0] <= len(fds) <= KINDS[kind].fds[1]:
        raise Malformed(f"{kind}: {len(fds)} descriptors")
    socket.send_fds(sock, [data], list(fds))


def receive(sock: socket.socket, expected: Sequence[str], *, credentials: bool = False) -> Message | None:
    """The next message, checked (Malformed: the descriptors that came with it are closed); None at end of file.
    With `credentials` (SO_PASSCRED on both ends, so the kernel attaches them to every message whenever it was
    sent) the sender's uid, as the kernel reports it, comes with it."""
    size = max(_HEAD.size + KINDS[k].layout.size for k in expected) + 1
    ancillary = socket.CMSG_SPACE(MAX_FDS * 4) + (socket.CMSG_SPACE(12) if credentials else 0)
    data, cmsgs, flags, _ = sock.recvmsg(size, ancillary)
    fds: list[int] = []
    uid = None
    for level, kind, payload in cmsgs:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            got = array.array("i")
            got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
            fds += list(got)
        elif level == socket.SOL_SOCKET and kind == getattr(socket, "SCM_CREDENTIALS", -1) and len(payload) >= 12:
            pid, sender, _ = struct.unpack("<iII", payload[:12])
            uid = sender if pid > 0 else None  # none attached: the sender's socket did not pass credentials
    try:
        if not data and not fds:
            return None
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise Malformed("truncated")
        message = decode(data, expected, len(fds))
    except Malformed:
        for fd in fds:
            os.close(fd)
        raise
    message.fds, message.uid = fds, uid
    return message
