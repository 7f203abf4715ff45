"""`kbv` (or `python -m client`): upload a bundle, wait for its verdicts, make a bundle from a KernelBench run folder.

    kbv submit BUNDLE --llm NAME --url URL --token T [--wait] [--json]
    kbv status ID
    kbv bundle RUN_FOLDER [-o run.zip]

Exit codes: 0 accepted (with --wait, and `status`: every kernel passed); 1 rejected by the server; 2 cannot reach
the server, or --timeout passed while waiting; 3 finished (or still running, for `status`) and not every kernel
passed; 4 `bundle` found no kernel file. With --json, stdout holds one JSON document and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
import urllib.error
import zipfile
from pathlib import Path
from typing import Any

from client.http import ApiError, get_json, post_multipart

FINISHED = {"done", "failed"}
EXIT_REJECTED, EXIT_UNREACHABLE, EXIT_NOT_ALL_PASSED, EXIT_NO_KERNEL = 1, 2, 3, 4
# KernelBench run-folder kernel names, as the server's bundle parser reads them (leaderboard/bundles/collector.py).
KERNEL_NAME_RE = re.compile(r"^level_(\d{1,4})_problem_(\d{1,6})_sample_(\d{1,6})(?:_kernel)?\.py$")
EVAL_RESULTS_NAME = "eval_results.json"


def progress_line(sub: dict[str, Any], width: int = 30) -> str:
    progress = sub.get("progress") or {}
    total = progress.get("total") or sub.get("kernel_count") or 0
    done = progress.get("done", sub.get("evaluated_count", 0))
    filled = int(width * done / total) if total else width
    line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} evaluated, {progress.get('correct', 0)} correct"
    if progress.get("running"):
        line += f", {progress['running']} running"
    if progress.get("queue_position") is not None:
        line += f", {progress['queue_position']} ahead in queue"
    return f"{line} ({sub.get('status')})"


RESULT_LABELS = {
    "compile_error": "compile error",
    "runtime_error": "runtime error",
    "timeout": "timeout",
    "rejected": "rejected",
}


def verdict(k: dict[str, Any], failed: list[str] | None = None) -> str:
    """One kernel's verdict as the site gives it: `correct 1.23x`, `incorrect: D4 failed`, `compile error`, ...

    `failed` names the distributions or checks that failed (from the evaluation's detail); the speedup of a kernel
    that failed the gate is not shown, since it does not count."""
    if k["status"] == "failed":
        return f"failed (infrastructure, no verdict){': ' + k['error'] if k.get('error') else ''}"
    if k["status"] != "done":
        return k["status"]
    if k.get("result_status") and k["result_status"] != "ok":
        label = RESULT_LABELS.get(k["result_status"], k["result_status"])
        return f"{label}: {k['error']}" if k.get("error") else label
    if k.get("correct"):
        return f"correct {k['speedup']:.2f}x" if k.get("speedup") else "correct"
    return f"incorrect: {', '.join(failed)} failed" if failed else "incorrect"


def failed_parts(evaluation: dict[str, Any]) -> list[str]:
    """The failed distributions (D1-D4) of an evaluation's detail, else its failed checks."""
    names = [d["name"] for d in evaluation.get("distributions") or [] if d.get("passed") is False]
    if names:
        return names
    checks = (evaluation.get("result") or {}).get("checks") or []
    return [c["name"] for c in checks if isinstance(c, dict) and c.get("passed") is False]


def explain_incorrect(sub: dict[str, Any], base_url: str, token: str | None) -> dict[int, list[str]]:
    """Evaluation id -> what failed, for the kernels that finished but failed the gate (one request each)."""
    out: dict[int, list[str]] = {}
    for k in (sub.get("progress") or {}).get("kernels", []):
        if k["status"] == "done" and k.get("result_status") == "ok" and not k.get("correct"):
            try:
                detail = get_json(f"{base_url.rstrip('/')}/api/evaluations/{k['evaluation_id']}/", token=token)
            except ApiError:
                continue
            out[k["evaluation_id"]] = failed_parts(detail)
    return out


def summary(sub: dict[str, Any], failed: dict[int, list[str]] | None = None) -> str:
    """Every kernel's verdict, errors whole (a multi-line one indented under its kernel)."""
    failed = failed or {}
    lines = [f"submission {sub['id']}: {sub['status']}, {sub['correct_count']}/{sub['kernel_count']} correct"]
    for k in (sub.get("progress") or {}).get("kernels", []):
        text = verdict(k, failed.get(k["evaluation_id"])).replace("\n", "\n      ")
        lines.append(f"  L{k['level']}/{k['problem_id']} sample {k['sample']}: {text}")
    if sub.get("page_url"):
        lines.append(f"page: {sub['page_url']}")
    return "\n".join(lines)


def all_passed(sub: dict[str, Any]) -> bool:
    """Finished, and every kernel of the submission correct."""
    return (
        sub.get("status") == "done"
        and bool(sub.get("kernel_count"))
        and sub.get("correct_count") == sub.get("kernel_count")
    )


def fit(line: str, columns: int) -> str:
    """One terminal line: cut to the width (a wrapped line cannot be redrawn with a carriage return)."""
    return line if len(line) < columns else line[: max(0, columns - 2)] + "\u2026"


class StillRunning(Exception):
    """--timeout passed while the server was still evaluating: the server answered, the wait ran out."""

    def __init__(self, submission: dict[str, Any], timeout: float) -> None:
        self.submission = submission
        sub_id = submission.get("id", "?")
        super().__init__(
            f"submission {sub_id} is still {submission.get('status')} after {timeout:.0f} s of waiting (--timeout): "
            f"{progress_line(submission)}; the server goes on evaluating it (kbv status {sub_id})"
        )


def wait(url: str, token: str | None, *, interval: float, timeout: float, out: Any) -> dict[str, Any]:
    """Poll the submission until it finishes. On a terminal one progress line is redrawn in place (cleared first,
    cut to the terminal's width); elsewhere (a log, a pipe) a plain line is written each time the progress changes."""
    deadline = time.monotonic() + timeout
    tty = bool(out) and out.isatty()
    last = ""
    while True:
        sub = get_json(url, token=token)
        line = progress_line(sub)
        if out is not None:
            if tty:
                columns = shutil.get_terminal_size(fallback=(80, 24)).columns
                out.write(f"\r\x1b[2K{fit(line, columns)}")
            elif line != last:
                out.write(f"{line}\n")
            out.flush()
        last = line
        if sub["status"] in FINISHED:
            if tty:
                out.write("\n")
            return sub
        if time.monotonic() > deadline:
            if tty:
                out.write("\n")
            raise StillRunning(sub, timeout)
        time.sleep(interval)


def cmd_submit(args: argparse.Namespace) -> int:
    path = Path(args.bundle)
    fields = {"llm": args.llm, "organisation": args.organisation, "notes": args.notes}
    for name in ("problem_set", "hardware", "level", "problem_id", "sample"):
        if getattr(args, name) is not None:
            fields[name] = str(getattr(args, name))
    try:
        created = post_multipart(
            f"{args.url.rstrip('/')}/api/submissions/",
            fields=fields,
            files={"bundle": (path.name, path.read_bytes())},
            token=args.token,
        )
    except ApiError as exc:
        body = exc.body if isinstance(exc.body, dict) else {"detail": exc.body}
        if args.json:
            print(json.dumps({"rejected": True, "status": exc.status, **body}))
            return EXIT_REJECTED
        print(f"rejected (HTTP {exc.status}): {body.get('detail', body)}", file=sys.stderr)
        for item in body.get("report") or []:
            print(f"  {item['name']}: {item['status']} {item['reason']}", file=sys.stderr)
        return EXIT_REJECTED
    if not args.json:
        print(submitted_text(created))
    if not args.wait:
        if args.json:
            print(json.dumps(created))
        return 0
    final = wait(
        created["url"], args.token, interval=args.interval, timeout=args.timeout, out=None if args.json else sys.stderr
    )
    if args.json:
        print(json.dumps({**final, "duplicate": bool(created.get("duplicate"))}))
    else:
        print(summary(final, explain_incorrect(final, args.url, args.token)))
    return 0 if all_passed(final) else EXIT_NOT_ALL_PASSED


def submitted_text(created: dict[str, Any]) -> str:
    """What the upload did: kernels queued, or a duplicate of an earlier submission (nothing queued)."""
    skipped = [r for r in created.get("report") or [] if r["status"] == "skipped"]
    if created.get("duplicate"):
        lines = [
            f"duplicate: submission {created['id']} already holds these kernels for this LLM, problem set and "
            f"hardware ({created['kernel_count']} kernels); nothing new was queued"
        ]
    else:
        lines = [
            f"submission {created['id']}: {created['kernel_count']} kernels queued on {created.get('hardware', '?')} "
            f"(problem set {created.get('problem_set', '?')}), {len(skipped)} files skipped"
        ]
    lines += [f"  skipped {item['name']}: {item['reason']}" for item in skipped]
    lines.append(f"page: {created['page_url']}")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    sub = get_json(f"{args.url.rstrip('/')}/api/submissions/{args.id}/", token=args.token)
    print(json.dumps(sub) if args.json else summary(sub, explain_incorrect(sub, args.url, args.token)))
    return 0 if all_passed(sub) else EXIT_NOT_ALL_PASSED


def run_folder_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """(kernel files, eval_results.json files) under a KernelBench run folder, at any depth, sorted."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    kernels = [p for p in files if KERNEL_NAME_RE.match(p.name)]
    results = [p for p in files if p.name == EVAL_RESULTS_NAME]
    return kernels, results


def cmd_bundle(args: argparse.Namespace) -> int:
    """Zip a KernelBench run folder's kernels (level_<L>_problem_<P>_sample_<S>_kernel.py) into an upload bundle."""
    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"error: {folder} is not a folder", file=sys.stderr)
        return EXIT_NO_KERNEL
    kernels, results = run_folder_files(folder)
    if not kernels:
        print(
            f"error: no kernel file under {folder} (expected level_<L>_problem_<P>_sample_<S>_kernel.py)",
            file=sys.stderr,
        )
        return EXIT_NO_KERNEL
    out = Path(args.output)
    seen: dict[str, Path] = {}
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in kernels:
            if path.name in seen:  # two samples of one name in different sub-folders: the server would skip one
                print(f"skipped {path}: same name as {seen[path.name]}", file=sys.stderr)
                continue
            seen[path.name] = path
            zf.write(path, f"{folder.name or 'run'}/{path.name}")
        if results:  # the submitter's own claims: stored beside the upload, never trusted
            zf.write(results[0], f"{folder.name or 'run'}/{EVAL_RESULTS_NAME}")
    if args.json:
        print(json.dumps({"bundle": str(out), "kernels": len(seen), "eval_results": bool(results)}))
    else:
        print(f"{out}: {len(seen)} kernels{' and ' + EVAL_RESULTS_NAME if results else ''} from {folder}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kbv", description="KernelBench-Verified command-line client.")
    p.add_argument("--url", default=os.getenv("KBV_URL", "http://127.0.0.1:8000"), help="server (env KBV_URL)")
    p.add_argument("--token", default=os.getenv("KBV_TOKEN"), help="API token from /account/ (env KBV_TOKEN)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout and nothing else")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("submit", help="upload a bundle (.zip/.tar.gz run folder, .json, .jsonl or one .py)")
    s.add_argument("bundle")
    s.add_argument("--llm", required=True, help="the LLM's name (created if new)")
    s.add_argument("--organisation", default="")
    s.add_argument("--notes", default="")
    s.add_argument("--problem-set", dest="problem_set")
    s.add_argument("--hardware")
    s.add_argument("--level", type=int, help="for a single .py kernel")
    s.add_argument("--problem-id", dest="problem_id", type=int, help="for a single .py kernel")
    s.add_argument("--sample", type=int)
    s.add_argument("--wait", action="store_true", help="wait for every evaluation, with a progress bar")
    s.add_argument("--interval", type=float, default=2.0, help="seconds between polls")
    s.add_argument("--timeout", type=float, default=6 * 3600, help="give up waiting after this many seconds")
    s.set_defaults(func=cmd_submit)
    st = sub.add_parser("status", help="show a submission")
    st.add_argument("id", type=int)
    st.set_defaults(func=cmd_status)
    b = sub.add_parser("bundle", help="zip a KernelBench run folder's kernel files into an upload bundle")
    b.add_argument("folder", help="run folder holding level_<L>_problem_<P>_sample_<S>_kernel.py files")
    b.add_argument("-o", "--output", default="run.zip", help="the zip to write (default run.zip)")
    b.set_defaults(func=cmd_bundle)
    # Let the global options also follow the subcommand (kbv submit x --url ... --token ...).
    for child in (s, st, b):
        child.add_argument("--url", default=argparse.SUPPRESS)
        child.add_argument("--token", default=argparse.SUPPRESS)
        child.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    return p


def error_text(exc: BaseException, url: str) -> str:
    """What went wrong, in one sentence that names the server (urllib's own text is '<urlopen error ...>')."""
    if isinstance(exc, ApiError):
        return f"the server at {url} answered {exc}"
    if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
        return f"the server at {url} did not answer in time"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot reach the server at {url}: {exc.reason}"
    return f"{exc} (server {url})"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except StillRunning as exc:  # not the server's fault: say where the submission stands
        if args.json:
            print(json.dumps({"error": str(exc), "still_running": exc.submission, "exit_code": EXIT_UNREACHABLE}))
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (urllib.error.URLError, OSError, TimeoutError, ApiError) as exc:
        message = error_text(exc, args.url)
        if args.json:  # stdout holds one JSON document, an error too
            print(json.dumps({"error": message, "url": args.url, "exit_code": EXIT_UNREACHABLE}))
        print(f"error: {message}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
