"""Why one problem times differently from one process to the next: each child process builds the problem's model,
times it on its own inputs, and names the device kernels one call launched, so a per-process speed can be told apart
from the algorithm a library picked (different kernels) or from where the tensors landed in device memory (the same
kernels, a different speed for a new allocation within one process).

    python3 benchmarks/per_process_speed_gpu.py --only L1/68 --processes 6 [--concurrent 3] [--out FILE.jsonl]

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
source, calls, placements = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
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
    for _ in range(5):
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
print(json.dumps({"medians_ms": medians, "kernels": kernels}))
"""


def problem_source(key: str) -> str:
    level, pid = (int(x) for x in key.lstrip("L").split("/"))
    for line in PROBLEMS.read_text().splitlines():
        row = json.loads(line)
        if row.get("level") == level and row.get("problem_id") == pid:
            return str(row["source"] if "source" in row else row["code"])
    raise SystemExit(f"no problem {key}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="L1/68")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--concurrent", type=int, default=1)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--placements", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    source = problem_source(args.only)

    def child(index: int) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, source, str(args.calls), str(args.placements)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode:
            return {"process": index, "error": done.stderr[-500:]}
        return {"process": index, **json.loads(done.stdout.strip().splitlines()[-1])}

    with ThreadPoolExecutor(args.concurrent) as pool:
        rows = list(pool.map(child, range(args.processes)))
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
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
