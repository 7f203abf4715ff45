"""Command line: `python -m evaluator.harness PROBLEM.py KERNEL.py --device cpu|cuda [--json] [--quick] ...`.

With --json the last line of stdout is the result record as one JSON object. The runner uses the second form,
`python -m evaluator.harness --spec SPEC.json --channel-fd N [--go-fd M]`, and reads events from that fd (never from
stdout). With --go-fd the harness is a standby: it starts its workers, then waits for a line "go" on fd M (the
problem and kernel files are in place by then), or "go MASTER" with the master seed of the evaluation it now runs
(the site's, published before the run; seeds.py); end of file instead means it was not needed, and it exits.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from evaluator.harness import seeds
from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.orchestrator import reproduce
from evaluator.harness.orchestrator.evaluation import evaluate
from evaluator.harness.protocol import Options, Spec, result_to_json
from evaluator.harness.sandbox.beneath import open_trusted_dir, remove_tree
from evaluator.harness.sandbox.hardening import make_undumpable
from evaluator.harness.sandbox.launching import Request, limits, run_to_end


def _summary(record: dict[str, Any]) -> str:
    lines = [
        f"status: {record['status']}   correct (verified): {record['correct']}   "
        f"standard_correct: {record['standard_correct']}"
    ]
    for d in record["distributions"]:
        state = "skipped: " + d["skip_reason"] if d["skipped"] else ("pass" if d["passed"] else "FAIL")
        lines.append(f"  {d['name']}: {state}  trials={d['trials']}  max_abs={d['max_abs_error']}  {d['error']}")
    if record["speedup"] is not None:
        ci = record["speedup_ci"] or [None, None]
        lines.append(
            f"speedup vs TF32 baseline: {record['speedup']:.3f}x  (95% CI {ci[0]}..{ci[1]})  "
            f"vs FP32: {record['speedup_fp32']:.3f}x  [{record['timing']['method']}]"
        )
    lines.append(
        f"memory ratio: {record['memory_ratio']}   params randomised: {record['params_randomised']}   "
        f"reference constant: {record['reference_constant']}"
    )
    for c in record["checks"]:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}[c["passed"]]
        lines.append(f"  [{mark}] {c['name']}: {c['detail']}")
    if record["error"]:
        lines.append(f"error: {record['error']}")
    return "\n".join(lines)


def _wait_for_go(fd: int) -> str | None:
    """None when the standby is not needed (end of file); else the master seed its "go" line names ("" for none)."""
    with os.fdopen(fd, "rb", buffering=0) as go:
        words = go.readline().split()
    if not words or words[0] != b"go":
        return None
    return words[1].decode("ascii", "replace") if len(words) > 1 else ""


def _channel_main(spec_path: str, fd: int, go_fd: int | None = None) -> int:
    make_undumpable()  # same-user processes cannot open our fds through /proc or ptrace us
    channel = os.fdopen(fd, "w", buffering=1)

    def emit(event: dict[str, Any]) -> None:
        channel.write(json.dumps(event) + "\n")
        channel.flush()

    spec = Spec.from_json(Path(spec_path).read_text())
    ready = None if go_fd is None else (lambda: _wait_for_go(go_fd))
    try:
        record = evaluate(spec, emit, ready)
    except HarnessInfraError as exc:
        emit({"event": "infra_error", "message": str(exc)[:2000]})
        return 3
    if record is None:  # a standby that was never used
        return 0
    try:
        line = result_to_json(record)  # checked first: a record of another shape is our bug, never printed
    except HarnessInfraError as exc:
        emit({"event": "infra_error", "message": str(exc)[:2000]})
        return 3
    channel.write('{"event": "result", "record": ' + line + "}\n")
    channel.flush()
    return 0


def _under_launcher(work: Path, args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    """One evaluation the way the runner starts them: the orchestrator under the launcher (sandbox/launching.py),
    its events read from the channel; the record, or HarnessInfraError with why not."""
    harness = work / "harness"
    harness.mkdir(mode=0o700)
    spec = Spec(
        problem_path=str(harness / "problem.py"),
        kernel_path=str(harness / "kernel.py"),
        device=args.device,
        timeout=args.timeout,
        work_dir=str(work),
        compile_cache_dir=str(Path(args.compile_cache).absolute()) if args.compile_cache else "",
        python=sys.executable,
        options=options,
    )
    Path(spec.problem_path).write_text(Path(args.problem).read_text())  # copies the orchestrator's uid may read
    Path(spec.kernel_path).write_text(Path(args.kernel).read_text())
    (harness / "spec.json").write_text(spec.to_json())
    opts = Options.build(options)
    for folder in (spec.compile_cache_dir, opts.gpu_lock_dir, opts.profile_dir):  # shared by the launcher
        if folder:
            os.makedirs(folder, exist_ok=True)
    request = Request(
        work=str(work.absolute()),
        python=sys.executable,
        cuda=args.device == "cuda",
        limits=limits(opts, args.timeout),
        cache=spec.compile_cache_dir,
        gpu_locks=str(Path(opts.gpu_lock_dir).absolute()) if opts.gpu_lock_dir else "",
        profile=str(Path(opts.profile_dir).absolute()) if opts.profile_dir else "",
        keep=opts.keep_workdir,
    )
    events = run_to_end(request, harness / "harness.log", timeout=args.timeout + 30)
    for event in events:
        record = event.get("record")
        if event.get("event") == "result" and isinstance(record, dict):
            return record
        if event.get("event") == "infra_error":
            raise HarnessInfraError(str(event.get("message")))
    tail = (harness / "harness.log").read_text(errors="replace")[-800:] if (harness / "harness.log").exists() else ""
    raise HarnessInfraError(f"the harness ended without a record: {tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluator.harness", description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?")
    parser.add_argument("kernel", nargs="?")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", action="store_true", help="print the record as one JSON object on the last line")
    parser.add_argument("--quick", action="store_true", help="small trial and call counts (tests, CPU demo)")
    parser.add_argument("--compile-baseline", action="store_true", help="also time a torch.compile baseline")
    parser.add_argument("--hardware", default="", help="hardware label stored with the result")
    parser.add_argument("--compile-cache", default="", help="directory for the kernel build cache")
    parser.add_argument("--work-root", default="", help="where private work directories are made")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON", help="any harness option")
    parser.add_argument(
        "--seeds", default="", metavar="MASTER", help="re-run with a revealed master seed (64 hex digits)"
    )
    parser.add_argument(
        "--compare",
        default="",
        metavar="RECORD.json",
        help="compare with a recorded verdict (a record, a dataset row or the API's evaluation detail): exit 1 when "
        "a verdict differs or the document does not hold together",
    )
    parser.add_argument("--strict", action="store_true", help="with --compare: exit 1 when any error figure differs")
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--channel-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--go-fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.spec:
        return _channel_main(args.spec, args.channel_fd, args.go_fd)
    if not (args.problem and args.kernel):
        parser.error("PROBLEM.py and KERNEL.py are required")
    options: dict[str, Any] = {
        "quick": args.quick,
        "compile_baseline": args.compile_baseline,
        "hardware": args.hardware,
    }
    for item in args.option:
        key, _, value = item.partition("=")
        options[key] = json.loads(value)
    if args.seeds:
        try:
            options["seeds"] = seeds.check(args.seeds)
        except ValueError as exc:
            parser.error(str(exc))
    work = Path(tempfile.mkdtemp(prefix="kbv-eval-", dir=args.work_root or None))
    try:
        record = _under_launcher(work, args, options)
        line = result_to_json(record)  # checked first: a record of another shape is our bug, never printed
    except (HarnessInfraError, OSError) as exc:
        print(f"infrastructure error: {exc}", file=sys.stderr)
        return 3
    finally:
        if not options.get("keep_workdir"):
            with contextlib.suppress(OSError), open_trusted_dir(work.parent) as parent:
                remove_tree(parent, work.name)
    print(line if args.json else _summary(record))
    if args.compare and record is not None:
        # A record, the API's evaluation detail ("result") or a dataset row ("record").
        original, published = reproduce.read_document(json.loads(Path(args.compare).read_text()))
        published = dataclasses.replace(published, master=options.get("seeds") or None)
        record.pop(seeds.RECORD_KEY, None)
        print(reproduce.report(original, record, published), file=sys.stderr if args.json else sys.stdout)
        if reproduce.compare(original, record, published).failed(strict=args.strict):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
