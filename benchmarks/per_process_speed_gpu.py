"""Why one problem times differently from one process to the next: each child process builds the problem's model,
times it on its own inputs, and names the device kernels one call launched, so a per-process speed can be told apart
from the algorithm a library picked (different kernels) or from where the tensors landed in device memory (the same
kernels, a different speed for a new allocation within one process).

    python3 benchmarks/per_process_speed_gpu.py --only L1/68 --processes 6 [--concurrent 3] [--out FILE.jsonl]
        [--fraction 0.05] [--hog-gb 120]

Memory pressure, to tell a library's algorithm fallback from a per-process speed: --fraction caps each child's
caching allocator (torch.cuda.set_per_process_memory_fraction), --hog-gb has another process hold that many GiB of
device memory while the children run. Each child says how many allocations failed inside it (the caching
allocator's num_ooms: a library such as cuDNN that catches the failure and falls back to another algorithm still
counts one) and its peak allocation at the first call (the workspace of the algorithm picked shows there).

Each child: seed 42 model and inputs, 5 warm-up calls, then for each of --placements fresh allocations of the inputs
(a spacer tensor of a random size before each, so they land elsewhere) the median of --calls CUDA-event timed calls
(TF32 on, as the harness's baseline), and the kernel names of one profiled call. Prints one JSON line per process and
a summary: the spread of the processes' medians, the spread of placements within each process, and how many distinct
kernel sets the processes launched. Imports no Django; torch only in the children.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = REPO / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"

CHILD = r"""
import json, random, statistics, sys, torch
source, calls, placements, fraction = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
if fraction:
    torch.cuda.set_per_process_memory_fraction(fraction)
space = {}
exec(compile(source, "problem", "exec"), space)
torch.manual_seed(42)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
model = space["Model"](*space["get_init_inputs"]()).cuda().eval()
torch.manual_seed(42)
base = [x.cuda() if isinstance(x, torch.Tensor) else x for x in space["get_inputs"]()]
rng = random.Random()
medians = []
with torch.no_grad():
    torch.cuda.synchronize()
    before_first = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    model(*base)
    torch.cuda.synchronize()
    first_call_extra_mb = (torch.cuda.max_memory_allocated() - before_first) / 2**20
    for _ in range(4):
        model(*base)
    for p in range(placements):
        spacer = torch.empty(rng.randrange(1, 64) << 20, dtype=torch.uint8, device="cuda")
        inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in base]
        for _ in range(3):
            model(*inputs)
        times = []
        for _ in range(calls):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record(); model(*inputs); end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        medians.append(statistics.median(times))
        del inputs, spacer
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        model(*base)
        torch.cuda.synchronize()
kernels = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
stats = torch.cuda.memory_stats()
print(json.dumps({"medians_ms": medians, "kernels": kernels, "num_ooms": stats.get("num_ooms", 0),
                  "first_call_extra_mb": round(first_call_extra_mb, 1),
                  "free_mb_at_end": round(torch.cuda.mem_get_info()[0] / 2**20)}))
"""


def problem_source(key: str) -> str:
    level, pid = (int(x) for x in key.lstrip("L").split("/"))
    for line in PROBLEMS.read_text().splitlines():
        row = json.loads(line)
        if row.get("level") == level and row.get("problem_id") == pid:
            return str(row["source"] if "source" in row else row["code"])
    raise SystemExit(f"no problem {key}")


HOG = r"""
import sys, time, torch
free = torch.cuda.mem_get_info()[0]
want = int(float(sys.argv[1]) * 2**30)
if want > free:
    print(f"only {free / 2**30:.1f} GiB free on this device, {want / 2**30:.1f} asked", flush=True)
    sys.exit(1)
block = torch.empty(want, dtype=torch.uint8, device="cuda")
print("holding", flush=True)
time.sleep(3600)
"""


def _hold_memory(gib: float) -> subprocess.Popen:
    """Another process holding `gib` GiB of device memory until killed (what neighbours' workers do)."""
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(gib)], stdout=subprocess.PIPE, text=True)
    assert hog.stdout is not None
    said = hog.stdout.readline().strip()
    if said != "holding":
        hog.kill()
        raise SystemExit(f"the memory holder did not start: {said or 'it exited without a word'}")
    return hog


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="L1/68")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--concurrent", type=int, default=1)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--placements", type=int, default=3)
    parser.add_argument("--fraction", type=float, default=0.0, help="each child's memory fraction (0: none)")
    parser.add_argument("--hog-gb", type=float, default=0.0, help="GiB another process holds meanwhile")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    source = problem_source(args.only)
    hog = _hold_memory(args.hog_gb) if args.hog_gb else None

    def child(index: int) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, source, str(args.calls), str(args.placements), str(args.fraction)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode:
            return {"process": index, "error": done.stderr[-500:]}
        return {"process": index, **json.loads(done.stdout.strip().splitlines()[-1])}

    try:
        with ThreadPoolExecutor(args.concurrent) as pool:
            rows = list(pool.map(child, range(args.processes)))
    finally:
        if hog:
            hog.kill()
    for row in rows:
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok = [r for r in rows if "medians_ms" in r]
    if not ok:
        raise SystemExit("no process timed")
    firsts = [r["medians_ms"][0] for r in ok]
    centre = statistics.median(firsts)
    within = [max(r["medians_ms"]) / min(r["medians_ms"]) - 1 for r in ok]
    summary = {
        "problem": args.only,
        "processes": len(ok),
        "concurrent": args.concurrent,
        "first_placement_medians_ms": [round(x, 4) for x in firsts],
        "between_processes_max_off_median": round(max(abs(x / centre - 1) for x in firsts), 4),
        "within_process_placements_spread_max": round(max(within), 4),
        "distinct_kernel_sets": len({tuple(r["kernels"]) for r in ok}),
        "fraction": args.fraction,
        "hog_gb": args.hog_gb,
        "num_ooms": [r["num_ooms"] for r in ok],
        "first_call_extra_mb": [r["first_call_extra_mb"] for r in ok],
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
