"""`python -m client submit BUNDLE --llm NAME --url URL --token T [--wait]` and `python -m client status ID`.

Exit codes: 0 accepted (and, with --wait, finished); 1 rejected by the server; 2 cannot reach the server or
--timeout passed while waiting.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
from pathlib import Path
from typing import Any

from client.http import ApiError, get_json, post_multipart

FINISHED = {"done", "failed"}


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
        return f"failed (infrastructure, no verdict){': ' + k['error'][:120] if k.get('error') else ''}"
    if k["status"] != "done":
        return k["status"]
    if k.get("result_status") and k["result_status"] != "ok":
        label = RESULT_LABELS.get(k["result_status"], k["result_status"])
        return f"{label}: {k['error'][:120]}" if k.get("error") else label
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
    failed = failed or {}
    lines = [f"submission {sub['id']}: {sub['status']}, {sub['correct_count']}/{sub['kernel_count']} correct"]
    for k in (sub.get("progress") or {}).get("kernels", []):
        lines.append(
            f"  L{k['level']}/{k['problem_id']} sample {k['sample']}: {verdict(k, failed.get(k['evaluation_id']))}"
        )
    if sub.get("page_url"):
        lines.append(f"page: {sub['page_url']}")
    return "\n".join(lines)


def wait(url: str, token: str | None, *, interval: float, timeout: float, out: Any) -> dict[str, Any]:
    """Poll the submission until it finishes; draws a one-line progress bar on a terminal."""
    deadline = time.monotonic() + timeout
    tty = out.isatty()
    while True:
        sub = get_json(url, token=token)
        line = progress_line(sub)
        out.write(f"\r{line}" if tty else f"{line}\n")
        out.flush()
        if sub["status"] in FINISHED:
            if tty:
                out.write("\n")
            return sub
        if time.monotonic() > deadline:
            raise TimeoutError(f"still {sub['status']} after {timeout:.0f} s")
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
        print(f"rejected (HTTP {exc.status}): {body.get('detail', body)}", file=sys.stderr)
        for item in body.get("report") or []:
            print(f"  {item['name']}: {item['status']} {item['reason']}", file=sys.stderr)
        return 1
    skipped = [r for r in created["report"] if r["status"] == "skipped"]
    print(f"submission {created['id']}: {created['kernel_count']} kernels queued, {len(skipped)} files skipped")
    for item in skipped:
        print(f"  skipped {item['name']}: {item['reason']}")
    print(f"page: {created['page_url']}")
    if args.json and not args.wait:
        print(json.dumps(created))
    if not args.wait:
        return 0
    final = wait(created["url"], args.token, interval=args.interval, timeout=args.timeout, out=sys.stderr)
    print(json.dumps(final) if args.json else summary(final, explain_incorrect(final, args.url, args.token)))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    sub = get_json(f"{args.url.rstrip('/')}/api/submissions/{args.id}/", token=args.token)
    print(json.dumps(sub) if args.json else summary(sub, explain_incorrect(sub, args.url, args.token)))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m client", description="KernelBench-Verified command-line client.")
    p.add_argument("--url", default=os.getenv("KBV_URL", "http://127.0.0.1:8000"), help="server (env KBV_URL)")
    p.add_argument("--token", default=os.getenv("KBV_TOKEN"), help="API token from /account/ (env KBV_TOKEN)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
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
    # Let the global options also follow the subcommand (python -m client submit x --url ... --token ...).
    for child in (s, st):
        child.add_argument("--url", default=argparse.SUPPRESS)
        child.add_argument("--token", default=argparse.SUPPRESS)
        child.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (urllib.error.URLError, OSError, TimeoutError, ApiError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
