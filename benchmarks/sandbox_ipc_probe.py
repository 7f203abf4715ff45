"""Which sandbox shapes keep the CUDA IPC hand-over (a GPU machine, as root). For each shape an exporter allocates a
tensor and exports it as the candidate worker does (handover.export_cuda); an importer opens it as the reference
worker does (handover.open_cuda) and checks the values. Exporter and importer may each run under bubblewrap, as
another uid, or inside the other's network namespace (nsenter). Prints one JSON line per shape.

    python3 benchmarks/sandbox_ipc_probe.py [--bwrap PATH]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

DROP = r"""
import os, sys
uid = int(sys.argv[1])
if uid:
    os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
"""
EXPORTER = (
    DROP
    + r"""
import json, torch
from evaluator.harness.workers.handover import export_cuda
t = torch.arange(1 << 20, dtype=torch.float32, device="cuda") * 0.5
torch.cuda.synchronize()
print(json.dumps({"pid": os.getpid(), "uid": os.getuid(), "desc": export_cuda(t)}), flush=True)
sys.stdin.readline()
"""
)
IMPORTER = (
    DROP
    + r"""
import json, torch
from evaluator.harness.workers.handover import open_cuda
desc = json.loads(sys.argv[2])
try:
    copy = open_cuda(desc, "cuda")
    ok = bool(torch.equal(copy, torch.arange(1 << 20, dtype=torch.float32, device="cuda") * 0.5))
    print(json.dumps({"opened": ok}))
except Exception as exc:
    print(json.dumps({"opened": False, "error": f"{type(exc).__name__}: {exc}"[:200]}))
"""
)


def bwrap(path: str, flags: list[str]) -> list[str]:
    args = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--die-with-parent"]
    for node in sorted(glob.glob("/dev/nvidia*")):
        args += ["--dev-bind", node, node]
    return [*args, *flags, "--"]


def deepest_child(pid: int) -> int:
    """The last descendant of `pid` (bwrap's monitor stays in the host's namespaces; the exporter is below it)."""
    while True:
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return pid
        if not kids:
            return pid
        pid = int(kids[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bwrap", default="bwrap")
    parser.add_argument("--uid", type=int, default=61234)
    opts = parser.parse_args()
    u = opts.uid
    # (name, exporter bwrap flags or None, exporter uid, importer: "host" | "netns" (the exporter's), importer uid)
    shapes = [
        ("plain", None, 0, "host", 0),
        ("mount ns only", [], 0, "host", 0),
        ("+net", ["--unshare-net"], 0, "host", 0),
        ("+pid", ["--unshare-pid"], 0, "host", 0),
        ("+ipc", ["--unshare-ipc"], 0, "host", 0),
        ("+uts", ["--unshare-uts"], 0, "host", 0),
        ("+net, importer in its netns", ["--unshare-net"], 0, "netns", 0),
        (
            "+net+pid+ipc+uts, importer in its netns",
            ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"],
            0,
            "netns",
            0,
        ),
        ("+net+pid+uts, importer in its netns", ["--unshare-net", "--unshare-pid", "--unshare-uts"], 0, "netns", 0),
        ("mount ns, other uid", [], u, "host", 0),
        ("mount ns, both other uid", [], u, "host", u),
        (
            "+net+pid+uts, both other uid, importer in its netns",
            ["--unshare-net", "--unshare-pid", "--unshare-uts"],
            u,
            "netns",
            u,
        ),
        (
            "+net+pid+ipc+uts, both other uid, importer in its netns",
            ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"],
            u,
            "netns",
            u,
        ),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name, flags, exp_uid, where, imp_uid in shapes:
        argv = [sys.executable, "-c", EXPORTER, str(exp_uid)]
        if flags is not None:
            argv = bwrap(opts.bwrap, flags) + argv
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd="/"
        )
        row: dict = {"shape": name}
        try:
            hello = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            imp = [sys.executable, "-c", IMPORTER, str(imp_uid), json.dumps(hello["desc"])]
            if where == "netns":
                imp = ["nsenter", f"--net=/proc/{deepest_child(proc.pid)}/ns/net", *imp]
                # bwrap's own pid is the monitor; the namespace is the child's, same netns for both
            done = subprocess.run(imp, capture_output=True, env=env, cwd="/", timeout=120)
            out = done.stdout.decode().strip().splitlines()
            row.update(json.loads(out[-1]) if out else {"opened": False, "error": done.stderr.decode()[-300:]})
        except Exception as exc:  # a probe reports every failure
            row.update(opened=False, error=f"{type(exc).__name__}: {exc}"[:300])
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        if not row.get("opened"):
            row["exporter_stderr"] = proc.stderr.read().decode(errors="replace")[-300:]  # type: ignore[union-attr]
        row["seconds"] = round(time.monotonic() - started, 2)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
