"""One evaluation's launcher: a child of the zygote that holds what only root may do for this evaluation and nothing
else. It sets the evaluation up (the uids it leases, its mount and network namespaces, the kernel's disks, its
folders), starts the orchestrator as an unprivileged uid, answers the orchestrator's few fixed requests (wire.py),
and at the end kills and reaps every process of the evaluation, frees the uids and removes its folders. It never
reads a worker's reply, never copies a file the kernel wrote and never writes the record. stdlib only.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
from pathlib import Path
from typing import Any

from evaluator.harness.environ import ENV_PASSTHROUGH, harness_env, worker_env
from evaluator.harness.sandbox.confine import MODE_VAR as LAUNCHER_MODE_VAR
from evaluator.harness.sandbox.confine import private_network
from evaluator.harness.sandbox.cpu_pin import CPU_SLOTS_VAR, general_cpus
from evaluator.harness.sandbox.disk import TMP_DISK, WORK_DISK, private_mounts
from evaluator.harness.sandbox.hardening import become_subreaper, kill_adopted_children, make_undumpable
from evaluator.harness.sandbox.launcher import layout, wire
from evaluator.harness.sandbox.launcher.pair import Pair
from evaluator.harness.sandbox.launcher.process import Identity, fork_exec
from evaluator.harness.sandbox.namespaces import (
    BWRAP_VAR,
    MODE_VAR,
    REQUIRE_VAR,
    Plan,
    SandboxUnavailable,
    bwrap_path,
    choose_mode,
)
from evaluator.harness.sandbox.privileges import UID_BASE, UidLease, check_runtime, open_path, parse_identity

ORCHESTRATOR_UID_BASE = 300000  # the orchestrator's uid: this + the evaluation's slot (the kernel's: UID_BASE + slot)
ORCHESTRATOR_GROUP = 299999  # every orchestrator's: the compile cache, the GPU locks and the CPU leases they share
CPU_SLOTS = Path("/run/kbv-sandbox-cpus")
REQUESTS = ("HELLO", "PAIR", "WAIT", "KILL", "END_PAIR", "BUILD", "PIN", "UNPIN")
MAX_PAIRS, MAX_REFUSALS = 16, 32
LAUNCHER_FD, CHANNEL_FD, GO_FD = 3, 4, 5  # in the orchestrator


class Failed(Exception):
    """The evaluation cannot be set up here (the runner gets the reason: an infrastructure error)."""


def half_the_machine() -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 8 << 30
    return max(2 << 30, total // 2)


class Evaluation:
    def __init__(self, start: wire.Message, peer: int) -> None:
        v = start.values
        self.start, self.peer, self.root = start, peer, os.geteuid() == 0
        self.mounted = False  # the kernel's disks are sized filesystems (root, and mounts allowed here)
        self.work, self.python, self.cuda = v["work"], v["python"], bool(v["cuda"])
        self.memory = v["memory"] or half_the_machine()
        self.fsize, self.cpu_seconds = v["fsize"], v["cpu_seconds"]
        self.env = dict(e.split("=", 1) for e in v["env"].split("\0") if e)
        if set(self.env) - set(ENV_PASSTHROUGH) or not v["work"] or not v["python"]:
            raise Failed(f"refused: variables {sorted(set(self.env) - set(ENV_PASSTHROUGH))} or no folder")
        self.paths = {name: f"{self.work}/{rel}" for name, rel in (
            ("harness", "harness"), ("reference", "reference"), ("handoff", "handoff"), ("etc", "sandbox-etc"),
            ("disk", WORK_DISK), ("candidate", f"{WORK_DISK}/candidate"), ("io", f"{WORK_DISK}/io"),
            ("build", f"{WORK_DISK}/build"), ("tmp", TMP_DISK))}  # fmt: skip
        self.fds: dict[str, int] = {}
        self.reaped: dict[int, int] = {}
        self.lease: UidLease | None = None
        self.kernel: Identity | None = None
        self.orchestrator: Identity | None = None
        self.leased = False
        self.plan: Plan | None = None
        self.mode, self.reason = "none", ""
        self.pair: Pair | None = None
        self.pairs = self.refusals = self.orch_pid = 0
        self.sock: socket.socket | None = None

    # --- set-up -----------------------------------------------------------------------------------------------

    def setup(self) -> None:
        make_undumpable()
        become_subreaper()  # what a kernel orphans (double fork, setsid) comes back here, to be counted and killed
        self._identities()
        v = self.start.values
        uid, gid = (self.kernel.uid, self.kernel.gid) if self.kernel else (os.getuid(), os.getgid())
        environ = {MODE_VAR: v["mode"] or "auto", REQUIRE_VAR: str(bool(v["require"])), BWRAP_VAR: v["bwrap"]}
        try:
            self.mode, reason = choose_mode(uid=uid, gid=gid, environ=environ)
        except (SandboxUnavailable, ValueError) as exc:
            raise Failed(str(exc)) from exc
        self.reason = reason or ""
        if self.root:
            with contextlib.suppress(OSError):  # no mounts here (a container without CAP_SYS_ADMIN): plain folders
                private_mounts()
                self.mounted = True
            if v["confine"]:
                private_network()
        self.fds["work"] = layout.open_owned(self.work, self.peer)
        self._folders()
        if self.mode == "namespaces":
            bwrap = bwrap_path(environ)
            assert bwrap is not None  # choose_mode found it
            p = {k: Path(v) for k, v in self.paths.items()}
            tmp = p["tmp"] if self.mounted else None  # a disk of its own; else bwrap's tmpfs
            self.plan = Plan(bwrap=bwrap, python=self.python, private_dir=p["candidate"], io_dir=p["io"],
                             build_dir=p["build"], etc_dir=p["etc"], handoff_dir=p["handoff"], cuda=self.cuda,
                             tmp_dir=tmp, tmp_bytes=v["tmp_bytes"], uid=uid, gid=gid)  # fmt: skip
            with layout.made(self.fds["work"], "sandbox-etc", 0o755, None) as etc:
                for name, text in self.plan.etc_files().items():
                    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=etc)
                    with os.fdopen(fd, "w") as fh:
                        fh.write(text)
        self._check_runtimes()

    def _identities(self) -> None:
        """Where root runs us: a slot of the machine's pool, whose two uids are this evaluation's own, one for the
        orchestrator and one for the kernel (unless KBV_SANDBOX_USER names another)."""
        if not self.root:
            return
        self.lease = UidLease()
        try:
            slot = self.lease.acquire()[0] - UID_BASE
        except RuntimeError as exc:
            raise Failed(str(exc)) from exc
        ours = ORCHESTRATOR_UID_BASE + slot
        self.orchestrator = Identity(ours, ours, (ORCHESTRATOR_GROUP,))
        user = (self.start["user"] or "auto").strip().lower()
        if user == "auto":
            self.kernel, self.leased = Identity(UID_BASE + slot, UID_BASE + slot), True
        elif user == "off":
            if self.peer != 0:
                raise Failed("KBV_SANDBOX_USER=off (the kernel as root) is refused to a caller that is not root")
        else:
            try:
                parsed = parse_identity(self.start["user"])
            except ValueError as exc:
                raise Failed(str(exc)) from exc
            self.kernel = Identity(*parsed) if parsed else None

    def _folders(self) -> None:
        """The evaluation's folders and disks (layout.py), the shared folders' group, and the way to them."""
        v, work, o, k = self.start.values, self.fds["work"], self.orchestrator, self.kernel
        ids = {name: (i.uid, i.gid) if i else None for name, i in (("o", o), ("k", k))}
        if self.root:
            for ident in (k, o):  # search (never read or write) on the way, in folders the caller owns (root: any)
                open_path(self.work, (ident.uid, ident.gid) if ident else None, owner=self.peer or -1)
            os.fchmod(work, 0o711)
            assert o is not None
            layout.share_harness(work, o.gid)
        with layout.made(work, "reference", 0o700, ids["o"]) as ref, layout.made(ref, "tmp", 0o700, ids["o"]):
            pass
        os.close(layout.make_dir(work, "handoff", 0o755, ids["o"]))
        for key, name, size, files in (("disk", WORK_DISK, v["work_bytes"], v["work_files"]),
                                       ("tmp", TMP_DISK, v["tmp_bytes"], v["tmp_files"])):  # fmt: skip
            if self.mounted:
                self.fds[key] = layout.mount_disk(work, name, size, files)
            else:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=work)
                self.fds[key] = layout.open_owned(name, self.peer, parent=work)
        layout.kernel_folders(self.fds["disk"], self.fds["tmp"], ids["k"], ids["o"])
        for name in ("cache", "gpu_locks", "profile"):  # the caller's folders the orchestrator writes in
            if v[name]:
                self.fds[name] = layout.open_owned(v[name], self.peer, group=ORCHESTRATOR_GROUP)
                if self.root:
                    layout.share_folder(self.fds[name], ORCHESTRATOR_GROUP, files=name == "gpu_locks")
        if self.root:
            CPU_SLOTS.mkdir(mode=0o700, exist_ok=True)
            cpus = layout.open_owned(str(CPU_SLOTS), 0, group=ORCHESTRATOR_GROUP)
            try:
                layout.share_folder(cpus, ORCHESTRATOR_GROUP, files=True)
            finally:
                os.close(cpus)

    def _check_runtimes(self) -> None:
        """Both users must be able to start the interpreter and find torch and the harness (a real process each):
        fail closed here, never blame the kernel for it."""
        k, o = self.kernel, self.orchestrator
        cand = Path(self.paths["candidate"])
        env = worker_env(private_dir=cand, base=self.env)
        wrap = self.plan.wrap if self.plan else None
        why = check_runtime(self.python, (k.uid, k.gid) if k else None, env=env, cwd=cand, wrap=wrap)
        if why is None and o is not None:
            home = Path(self.paths["harness"])
            why = check_runtime(self.python, (o.uid, o.gid), env=harness_env(home, self.env), cwd=home)
        if why:
            raise Failed(why)

    # --- the orchestrator -------------------------------------------------------------------------------------

    def launch(self, fds: list[int]) -> int:
        """The orchestrator, as its uid with nothing else: `fds` are the runner's (channel, log, [go])."""
        channel, log, go = fds[0], fds[1], fds[2:]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        argv = [self.python, "-m", "evaluator.harness", "--spec", f"{self.paths['harness']}/spec.json"]
        argv += ["--channel-fd", str(CHANNEL_FD)] + (["--go-fd", str(GO_FD)] if go else [])
        env = harness_env(Path(self.paths["harness"]), self.env)
        env.update({"KBV_LAUNCHER_FD": str(LAUNCHER_FD), LAUNCHER_MODE_VAR: "privileged" if self.root else "same user"})
        if self.root:
            env[CPU_SLOTS_VAR] = str(CPU_SLOTS)
        devnull = os.open(os.devnull, os.O_RDONLY)
        harness = os.open("harness", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.fds["work"])
        try:
            self.orch_pid = fork_exec(argv, env, fds=[devnull, log, log, theirs.fileno(), channel, *go],
                                      cwd_fd=harness, identity=self.orchestrator, umask=0o002)  # fmt: skip
        finally:
            theirs.close()
            for fd in (devnull, harness, *fds):
                os.close(fd)
        return self.orch_pid

    # --- serving ----------------------------------------------------------------------------------------------

    def reap(self) -> None:
        """The orchestrator and the workers, once ended. Anything else that ends here is an orphan the kernel left
        (the launcher is a subreaper): it stays until the pair's end counts it (kill_adopted_children)."""
        ours = [self.orch_pid, *(w.pid for w in (self.pair.workers if self.pair else []))]
        for pid in ours:
            if pid and pid not in self.reaped:
                with contextlib.suppress(ChildProcessError):
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        self.reaped[pid] = status

    def serve(self, life: socket.socket) -> None:
        """Answer the orchestrator until it ends, or until the runner gives up (anything on the life socket)."""
        assert self.sock is not None
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        poller.register(life, select.POLLIN)
        while True:
            self.reap()
            if self.orch_pid in self.reaped:
                return
            for fd, _ in poller.poll(500):
                if fd == life.fileno():
                    return
                if not self.answer():
                    poller.unregister(self.sock)

    def answer(self) -> bool:
        """One request answered (or refused); False at the end of the socket."""
        assert self.sock is not None
        try:
            message = wire.receive(self.sock, REQUESTS)
        except wire.Malformed as exc:
            return self._refuse(str(exc))
        except OSError:
            return False
        if message is None:
            return False
        try:
            reply, values, fds = self._handle(message)
        except (layout.Refused, OSError, ValueError) as exc:
            return self._refuse(f"{message.kind}: {exc}")
        try:
            wire.send(self.sock, reply, fds, **values)
        finally:
            if message.kind in ("PAIR", "BUILD"):
                for fd in fds:
                    os.close(fd)
        return True

    def _refuse(self, why: str) -> bool:
        assert self.sock is not None
        self.refusals += 1
        if self.refusals > MAX_REFUSALS:  # an orchestrator that keeps sending garbage is ended
            with contextlib.suppress(OSError):
                os.killpg(self.orch_pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            wire.send(self.sock, "REFUSED", reason="".join(c if c.isprintable() else "?" for c in why)[:500])
        return True

    def _handle(self, message: wire.Message) -> tuple[str, dict[str, Any], list[int]]:
        kind, pair = message.kind, self.pair
        if kind == "HELLO":
            fds = [self.fds["disk"], self.fds["tmp"], *([self.fds["cache"]] if "cache" in self.fds else [])]
            k, v = self.kernel, self.start.values
            values = {"mode": self.mode, "reason": "".join(c if c.isprintable() else " " for c in self.reason)[:500],
                      "cand_uid": k.uid if k else -1, "cand_gid": k.gid if k else -1, "launcher_pid": os.getpid(),
                      "privileged": int(self.root), "mounted": int(self.mounted), "cache": int("cache" in self.fds),
                      **{name: v[name] for name, _ in wire.LIMITS}, "memory": self.memory}  # fmt: skip
            return "SETUP", values, fds
        if kind == "PAIR":
            if pair is not None or self.pairs >= MAX_PAIRS:
                raise ValueError("a pair is running, or too many pairs")
            self.pairs += 1
            self.pair = Pair(self, self.pairs)
            values, fds = self.pair.start()
            return "PAIRED", values, fds
        if kind == "BUILD":
            if message["fresh"]:
                layout.empty_build(self.fds["disk"], self.pairs)
            return "FD", {}, [os.open("build", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.fds["disk"])]
        if pair is None or len(pair.workers) < 2:
            raise ValueError("no worker pair")
        if kind == "WAIT":
            exited, status = pair.status(message["role"])
            return "STATUS", {"exited": exited, "status": status}, []
        if kind == "KILL":
            pair.kill(message["role"])
            return "DONE", {}, []
        if kind == "END_PAIR":
            count = pair.end(keep={self.orch_pid})
            self.pair = None
            return "STRAYS", {"count": count}, []
        if kind == "UNPIN":  # every CPU but those set aside for timed loops
            ref, cand = pair.pin(set(general_cpus(set(os.sched_getaffinity(0)))))
            return "PINNED", {"reference": ref, "candidate": cand}, []
        cpu = message["cpu"]  # PIN
        if cpu not in os.sched_getaffinity(0):
            raise ValueError(f"CPU {cpu} is not one of ours")
        ref, cand = pair.pin({cpu})
        return "PINNED", {"reference": ref, "candidate": cand}, []

    # --- the end ----------------------------------------------------------------------------------------------

    def teardown(self) -> int:
        """Every process of the evaluation killed and reaped, the uids freed, our folders removed; the
        orchestrator's exit code (-1 when it was killed here)."""
        if self.orch_pid:
            with contextlib.suppress(OSError):
                os.killpg(self.orch_pid, signal.SIGKILL)
        if self.pair is not None:
            with contextlib.suppress(OSError):
                self.pair.end(keep=set())
            self.pair = None
        kill_adopted_children(lambda pid: False)
        self.reap()
        status = self.reaped.get(self.orch_pid)
        if self.lease is not None:
            self.lease.release()
        if "work" in self.fds and not self.start["keep"]:
            layout.remove_ours(self.fds["work"], disks=not self.mounted)
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        return -1 if status is None else os.waitstatus_to_exitcode(status)
