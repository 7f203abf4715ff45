"""Where does the between-process spread of a short problem's timing come from?

Outside the harness: each problem's reference is timed in several fresh processes, one after another, and inside
each process under several allocations of its inputs and weights. Per block of calls it records

- `synced`: the harness's way (flush, synchronise, start event, call, end event, synchronise): the GPU sits idle
  while the CPU launches the call's first kernel, so the host's launch latency lands inside the events;
- `queued`: the same without the synchronise after the flush, so the call is launched while the flush still runs
  and the events hold GPU time only;
- `launch`: the CPU time of the call itself (Python + launch), no sync;
- the SM clock before and after the block (NVML, when importable), the CPU the process ran on, the inputs' addresses.

Comparing the spread of per-process medians with the spread of per-allocation medians inside a process, and
`synced` with `queued`, says whether the cause is host launch latency, addresses, or the GPU itself.

Launch-bound problems (L3/20, MobileNetV2: the GPU waits for ~150 launches a call) ran 1.4x apart in different
processes (process-pairs-h200.md). Each process also records where it ran and where its memory lives (`numa`: the
NUMA node of its CPU, its pages per node, the GPU's node; `topology.json` once), and `--pin nodes` starts the
processes alternately pinned to each NUMA node's CPUs (before torch is imported, so first-touch pages land there):
if the host speed follows the node, pinning the workers next to the GPU is the fix.

    python3 benchmarks/timing_spread_gpu.py --out $OUT/spread --processes 6
    python3 benchmarks/timing_spread_gpu.py --out $OUT/spread --only L3/20 --processes 8 --pin nodes
    python3 benchmarks/timing_spread_gpu.py --out $OUT/one --only L3/20 --processes 8 --pin one [--no-aslr]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = REPO / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"


def _source(level: int, pid: int) -> str:
    for line in PROBLEMS.read_text().splitlines():
        row = json.loads(line)
        if row["level"] == level and row["problem_id"] == pid:
            return str(row["source"])
    raise SystemExit(f"no problem L{level}/{pid}")


def _nvml_clock() -> Callable[[], int | None]:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
    except Exception:  # NVML is optional here
        return lambda: None


def _cpu() -> int:
    return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[36])


def _nodes() -> dict[int, list[int]]:
    """NUMA node -> its CPUs (one node 0 with every CPU when the machine shows no NUMA)."""
    nodes = {}
    for node in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        cpus: list[int] = []
        for part in (node / "cpulist").read_text().strip().split(","):
            if part:
                lo, _, hi = part.partition("-")
                cpus += range(int(lo), int(hi or lo) + 1)
        nodes[int(node.name[4:])] = cpus
    return nodes or {0: sorted(os.sched_getaffinity(0))}


def _gpu_node_cpus(nodes: dict[int, list[int]]) -> list[int]:
    """The CPUs of GPU 0's NUMA node (all CPUs when sysfs does not say), read without importing torch."""
    try:
        bus = subprocess.run(
            ["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader", "-i", "0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        node = int(Path(f"/sys/bus/pci/devices/{bus[-12:].lower()}/numa_node").read_text())
    except (OSError, ValueError, subprocess.CalledProcessError):
        node = -1
    return nodes.get(node) or sorted(c for cpus in nodes.values() for c in cpus)


def _pages_per_node() -> dict[str, int]:
    """This process's mapped pages per NUMA node (/proc/self/numa_maps: N0=123 N1=45 ...)."""
    counts: dict[str, int] = {}
    try:
        text = Path("/proc/self/numa_maps").read_text()
    except OSError:
        return counts
    for token in text.split():
        if token.startswith("N") and "=" in token:
            node, _, pages = token.partition("=")
            if pages.isdigit():
                counts[node] = counts.get(node, 0) + int(pages)
    return counts


def _topology() -> dict[str, Any]:
    """NUMA nodes, the GPU's node and link, transparent huge pages: once per run."""
    import torch

    props = torch.cuda.get_device_properties(0)
    bus = f"{getattr(props, 'pci_domain_id', 0):04x}:{getattr(props, 'pci_bus_id', 0):02x}:"
    bus += f"{getattr(props, 'pci_device_id', 0):02x}.0"
    gpu_node = Path(f"/sys/bus/pci/devices/{bus}/numa_node")
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, check=False)
    return {
        "nodes": _nodes(),
        "gpu_pci": bus,
        "gpu_numa_node": gpu_node.read_text().strip() if gpu_node.exists() else None,
        "transparent_hugepage": thp.read_text().strip() if thp.exists() else None,
        "nvidia_smi_topo": topo.stdout[-3000:],
        "cpu_model": next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            None,
        ),
    }


def _time_block(
    model: Any, args: list[Any], flush_buf: Any, calls: int, *, synced: bool
) -> tuple[list[float], list[float]]:
    """`calls` timed calls: (event times, host times of the call itself), both ms. `synced`: the GPU idle when the
    start event fires (the harness's old way); else the call is launched while the flush still runs."""
    import torch

    times, launches = [], []
    for _ in range(calls):
        flush_buf.fill_(1)
        if synced:
            torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        t0 = time.perf_counter()
        out = model(*args)
        t1 = time.perf_counter()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
        launches.append((t1 - t0) * 1e3)
        del out
    return times, launches


def child(level: int, pid: int, allocations: int, calls: int) -> None:
    import torch

    ns: dict[str, object] = {}
    exec(compile(_source(level, pid), f"L{level}_{pid}", "exec"), ns)  # a shipped reference
    clock = _nvml_clock()
    flush_buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    rows = []
    for alloc in range(allocations):
        pad = torch.empty(int.from_bytes(os.urandom(2), "little") * 4096 + 512, dtype=torch.int8, device="cuda")
        torch.manual_seed(1)
        model = ns["Model"](*ns["get_init_inputs"]()).cuda()  # type: ignore[operator]
        torch.manual_seed(2)
        args = [a.cuda() if isinstance(a, torch.Tensor) else a for a in ns["get_inputs"]()]  # type: ignore[operator]
        with torch.no_grad():
            for _ in range(20):
                model(*args)
            torch.cuda.synchronize()
            for mode in ("synced", "queued", "synced", "queued"):
                c0 = clock()
                times, launches = _time_block(model, args, flush_buf, calls, synced=mode == "synced")
                rows.append(
                    {
                        "alloc": alloc,
                        "mode": mode,
                        "median_ms": statistics.median(times),
                        "p10_ms": sorted(times)[len(times) // 10],
                        "launch_ms": statistics.median(launches),
                        "clock_before": c0,
                        "clock_after": clock(),
                        "cpu": _cpu(),
                        "ptr_mod_64k": [a.data_ptr() % 65536 for a in args if isinstance(a, torch.Tensor)],
                    }
                )
        del model, args, pad
    cpu = _cpu()
    node = next((n for n, cpus in _nodes().items() if cpu in cpus), None)
    numa = {"cpu_node": node, "pages_per_node": _pages_per_node()}
    print(json.dumps({"rows": rows, "affinity": sorted(os.sched_getaffinity(0)), "numa": numa}))


def per_core(level: int, pid: int, calls: int, passes: int) -> None:
    """One process, pinned in turn to every core it may use (shuffled, `passes` times): is the host's launch
    latency a property of the core (then pinning both workers of a pair to one core cancels it) or of the moment?"""
    import random

    import torch

    ns: dict[str, object] = {}
    exec(compile(_source(level, pid), f"L{level}_{pid}", "exec"), ns)  # a shipped reference
    flush_buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    torch.manual_seed(1)
    model = ns["Model"](*ns["get_init_inputs"]()).cuda()  # type: ignore[operator]
    torch.manual_seed(2)
    args = [a.cuda() if isinstance(a, torch.Tensor) else a for a in ns["get_inputs"]()]  # type: ignore[operator]
    cores = sorted(os.sched_getaffinity(0))
    rows = []
    with torch.no_grad():
        for _ in range(20):
            model(*args)
        for p in range(passes):
            order = cores[:]
            random.shuffle(order)
            for core in order:
                os.sched_setaffinity(0, {core})
                times, launches = _time_block(model, args, flush_buf, calls, synced=True)
                rows.append(
                    {
                        "pass": p,
                        "core": core,
                        "synced_ms": statistics.median(times),
                        "launch_ms": statistics.median(launches),
                    }
                )
    print(json.dumps({"per_core": rows}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", nargs="*", default=["L1/10", "L2/12"])
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--allocations", type=int, default=3)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--child", default="")
    ap.add_argument("--child-core", default="")
    ap.add_argument("--per-core", default="", help="L1/10: one process pinned to each core in turn")
    ap.add_argument(
        "--pin",
        choices=["none", "nodes", "one"],
        default="none",
        help="nodes: processes alternate NUMA nodes; one: every process on the same single CPU of the GPU's node",
    )
    ap.add_argument("--no-aslr", action="store_true", help="start each process with address randomisation off")
    ap.add_argument("--child-cpus", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.per_core:
        level, pid = (int(x) for x in a.per_core.lstrip("L").split("/"))
        a.out.mkdir(parents=True, exist_ok=True)
        res = subprocess.run(
            [sys.executable, __file__, "--out", str(a.out), "--child-core", a.per_core],
            capture_output=True,
            text=True,
            timeout=500,
        )
        print(res.stderr[-2000:])
        (a.out / "per_core.json").write_text(res.stdout)
        rows = json.loads(res.stdout.strip().splitlines()[-1])["per_core"]
        for r in sorted(rows, key=lambda r: (r["core"], r["pass"])):
            print(r["core"], r["pass"], round(r["synced_ms"], 4), round(r["launch_ms"], 4))
        return
    if a.child_core:
        level, pid = (int(x) for x in a.child_core.lstrip("L").split("/"))
        per_core(level, pid, a.calls, 3)
        return
    if a.child:
        if a.child_cpus:  # before torch is imported: its threads and first-touch pages start on these CPUs
            os.sched_setaffinity(0, {int(c) for c in a.child_cpus.split(",")})
        level, pid = (int(x) for x in a.child.lstrip("L").split("/"))
        child(level, pid, a.allocations, a.calls)
        return
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "topology.json").write_text(json.dumps(_topology(), indent=1))
    nodes = _nodes()
    summary = {}
    for name in a.only:
        per_process = []
        for p in range(a.processes):
            cmd = [sys.executable, __file__, "--out", str(a.out), "--child", name]
            cmd += ["--allocations", str(a.allocations), "--calls", str(a.calls)]
            if a.pin == "nodes":
                node_cpus = nodes[sorted(nodes)[p % len(nodes)]]
                cmd += ["--child-cpus", ",".join(map(str, node_cpus))]
            elif a.pin == "one":  # same CPU for all: what still differs between processes is the process itself
                cmd += ["--child-cpus", str(_gpu_node_cpus(nodes)[0])]
            if a.no_aslr and shutil.which("setarch"):  # same addresses in every process: is it the layout?
                cmd = ["setarch", os.uname().machine, "-R", *cmd]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if res.returncode != 0:
                print(name, "process", p, "failed:", res.stderr[-2000:])
                continue
            data = json.loads(res.stdout.strip().splitlines()[-1])
            per_process.append(data)
            with open(a.out / "timing_spread.jsonl", "a") as fh:
                fh.write(json.dumps({"problem": name, "process": p, **data}) + "\n")
        summary[name] = _summarise(per_process)
        print(name, json.dumps(summary[name], indent=1), flush=True)
    (a.out / "timing_spread_summary.json").write_text(json.dumps(summary, indent=1))


def _spread(values: list[float]) -> dict[str, float]:
    med = statistics.median(values)
    return {"median": round(med, 4), "max_dev_pct": round(100 * max(abs(v - med) for v in values) / med, 2)}


def _summarise(per_process: list[dict[str, Any]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for mode in ("synced", "queued"):
        proc_meds = [statistics.median(r["median_ms"] for r in d["rows"] if r["mode"] == mode) for d in per_process]
        inner = []
        for d in per_process:
            allocs = sorted({r["alloc"] for r in d["rows"]})
            meds = [
                statistics.median(r["median_ms"] for r in d["rows"] if r["mode"] == mode and r["alloc"] == al)
                for al in allocs
            ]
            inner.append(_spread(meds)["max_dev_pct"])
        out[mode] = {
            "between_processes": _spread(proc_meds),
            "per_process_ms": [round(m, 4) for m in proc_meds],
            "within_process_between_allocations_max_dev_pct": inner,
        }
    out["launch_ms_per_process"] = [round(statistics.median(r["launch_ms"] for r in d["rows"]), 4) for d in per_process]
    out["clocks"] = [[(r["clock_before"], r["clock_after"]) for r in d["rows"]][:4] for d in per_process]
    out["cpus"] = [sorted({r["cpu"] for r in d["rows"]}) for d in per_process]
    out["numa"] = [d.get("numa") for d in per_process]
    return out


if __name__ == "__main__":
    main()
