"""Faults during a 20-kernel bundle: a worker SIGKILLed mid-evaluation and a broker restart that loses every message.

Starts a private Redis (no persistence: a restart loses the queue, the worst case), a fresh deployment in a temporary
VAR_DIR (SQLite, `runserver`, one worker on eval-cpu + default, `celery beat` running the reaper), uploads 20 demo
kernels (the 8 of `leaderboard/demo/kernels` under 20 sample numbers), then:
  1. once 3 kernels are evaluated: SIGKILL the worker's process group while it evaluates, start a new worker (what
     `make run`'s supervisor does);
  2. once 8 are evaluated: stop Redis, upload 2 more kernels while it is down, start Redis again (empty);
and waits until both submissions are done. It then checks, from the database, that every kernel has exactly one
current evaluation, finished once and counted once, and that no harness process or work folder is left.

    .venv/bin/python benchmarks/faults.py [--out benchmarks/results/faults.md]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.http import post_multipart  # noqa: E402
from tests.pipeline.stack import CELERY, Stack, free_port  # noqa: E402  (the e2e tests' subprocess deployment)

KERNELS = sorted((ROOT / "leaderboard" / "demo" / "kernels").glob("level_*_kernel.py"))
SETTINGS = {  # short thresholds so the run takes minutes; the defaults are in README "Reliability"
    "EVALUATOR_HEARTBEAT_INTERVAL": "2",
    "EVALUATOR_HEARTBEAT_STALE": "10",
    "EVALUATOR_ENQUEUE_STALE": "5",
    "EVALUATOR_QUEUED_STALE": "30",
    "EVALUATOR_REAP_INTERVAL": "5",
}
FACTS = """
import json
from evaluator.models import DistributionResult, Evaluation
from catalogue.models import Kernel, Submission
ids = {ids!r}
kernels = Kernel.objects.filter(submission__in=ids)
evs = Evaluation.objects.filter(kernel__in=kernels)
print(json.dumps({{
    "submissions": list(Submission.objects.filter(pk__in=ids).order_by("pk").values(
        "id", "status", "kernel_count", "evaluated_count", "correct_count")),
    "kernels": kernels.count(),
    "evaluations": list(evs.order_by("pk").values("id", "kernel_id", "status", "attempts", "is_current", "correct",
                                                  "error", "queued_at", "finished_at")),
    "distribution_rows": DistributionResult.objects.filter(evaluation__in=evs).count(),
}}, default=str))
"""


def bundle(count: int, first_sample: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(count):
            path = KERNELS[i % len(KERNELS)]
            level, problem, sample = (int(p) for p in path.stem.split("_")[1:6:2])
            name = f"level_{level}_problem_{problem}_sample_{first_sample + sample + 2 * (i // 8)}_kernel.py"
            zf.write(path, f"run/{name}")
    return buf.getvalue()


class Redis:
    def __init__(self, folder: Path) -> None:
        self.port, self.folder = free_port(), folder
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
        )
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout != b"PONG\n":
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def facts(stack: Stack, ids: list[int]) -> dict:
    return json.loads(stack.manage("shell", "-c", FACTS.format(ids=ids)).strip().splitlines()[-1])


def _row(stack: Stack, pk: int, field: str) -> str:
    code = f"from evaluator.models import Evaluation as E; print(repr(E.objects.get(pk={pk}).{field}))"
    return stack.manage("shell", "-c", code).strip().splitlines()[-1]


def attempts(stack: Stack, pk: int) -> int:
    return int(_row(stack, pk, "attempts"))


def error(stack: Stack, pk: int) -> str:
    return str(_row(stack, pk, "error"))


def evaluated(stack: Stack, sub_id: int) -> tuple[int, int]:
    data = stack.get(f"/api/submissions/{sub_id}/")
    return data["evaluated_count"], data["progress"]["running"]


def wait(what: str, check, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.5)


def upload(stack: Stack, data: bytes) -> dict:
    return post_multipart(
        f"{stack.url}/api/submissions/",
        fields={"llm": "faults", "problem_set": "demo", "hardware": "cpu"},
        files={"bundle": ("run.zip", data)},
        token=stack.token,
    )


def start_worker(stack: Stack, name: str) -> None:
    stack._start(
        name,
        [
            CELERY,
            "-A",
            "config",
            "worker",
            "-Q",
            "eval-cpu,default",
            "-c",
            "1",
            "--prefetch-multiplier",
            "1",
            "-n",
            f"{name}@%h",
            "-l",
            "INFO",
        ],
    )


def run() -> tuple[list[str], bool]:
    log: list[str] = []

    def note(text: str) -> None:
        line = f"t+{time.monotonic() - t0:6.1f} s  {text}"
        log.append(line)
        print(line, flush=True)

    with tempfile.TemporaryDirectory(prefix="kbv-faults-") as tmp:
        redis = Redis(Path(tmp))
        redis.start()
        stack = Stack(Path(tmp), env={"CELERY_BROKER_URL": f"redis://127.0.0.1:{redis.port}/0", **SETTINGS})
        try:
            stack.setup()
            stack.start_web()
            start_worker(stack, "worker1")
            stack._start("beat", [CELERY, "-A", "config", "beat", "-l", "INFO", "-s", f"{tmp}/beat-schedule"])
            time.sleep(3)
            t0 = time.monotonic()
            main = upload(stack, bundle(20, 0))
            note(f"uploaded 20 kernels: submission {main['id']} ({main['status']})")
            ids = [main["id"]]

            wait(
                "3 evaluated and one running", lambda: (lambda e: e[0] >= 3 and e[1] == 1)(evaluated(stack, main["id"]))
            )
            stack.kill("worker1")
            note(f"SIGKILL worker1 mid-evaluation (evaluated {evaluated(stack, main['id'])[0]} of 20)")
            start_worker(stack, "worker2")
            note("started worker2")
            (victim,) = [e for e in facts(stack, ids)["evaluations"] if e["status"] == "running"]
            wait("the requeue", lambda: attempts(stack, victim["id"]) > 1 or "requeued" in error(stack, victim["id"]))
            note(f"evaluation #{victim['id']} requeued by the reaper (missed heartbeat)")

            wait("8 evaluated", lambda: evaluated(stack, main["id"])[0] >= 8)
            redis.stop()
            note(f"broker stopped (evaluated {evaluated(stack, main['id'])[0]} of 20)")
            extra = upload(stack, bundle(2, 100))
            ids.append(extra["id"])
            note(f"uploaded 2 kernels while the broker is down: {extra['status']}, note: {extra.get('note', '-')!r}")
            time.sleep(5)
            redis.start()
            note("broker started again, empty (no persistence): every queued message is lost")
            done_before = evaluated(stack, main["id"])[0] + evaluated(stack, extra["id"])[0]
            wait("progress", lambda: evaluated(stack, main["id"])[0] + evaluated(stack, extra["id"])[0] > done_before)
            note("first result after the restart")

            wait("all done", lambda: all(stack.get(f"/api/submissions/{i}/")["status"] == "done" for i in ids))
            note("both submissions done")
            time.sleep(2 * int(SETTINGS["EVALUATOR_REAP_INTERVAL"]))  # a reaper pass after the last result
            result = facts(stack, ids)
            work = Path(tmp) / "var" / "work"
            leftovers = sorted(p.name for p in work.glob("eval-*")) if work.exists() else []
            harnesses = subprocess.run(["pgrep", "-f", f"{work}/"], capture_output=True, text=True).stdout.split()
        finally:
            stack.stop()
            redis.stop()

    evs = result["evaluations"]
    kernels = result["kernels"]
    current = [e for e in evs if e["is_current"]]
    done = [e for e in current if e["status"] == "done"]
    subs = result["submissions"]
    checks = {
        "every kernel has exactly one current evaluation": len(current)
        == kernels
        == len({e["kernel_id"] for e in current}),
        "every evaluation finished (done), none failed or stuck": len(done) == kernels,
        "submissions: evaluated_count == kernel_count, status done": all(
            s["evaluated_count"] == s["kernel_count"] and s["status"] == "done" for s in subs
        ),
        "correct_count == correct done evaluations": sum(s["correct_count"] for s in subs)
        == sum(bool(e["correct"]) for e in done),
        "distribution rows stored once (4 per evaluation at most)": result["distribution_rows"] <= 4 * kernels,
        "no work folder left": not leftovers,
        "no harness process left": not harnesses,
    }
    retried = [e for e in evs if e["attempts"] > 1]
    retried_text = ", ".join(f"#{e['id']}: {e['attempts']} attempts, {e['error'][:70]!r}" for e in retried)
    lines = [
        "Timeline:",
        "",
        "```",
        *log,
        "```",
        "",
        f"- kernels: {kernels} (20 + 2 uploaded during the outage); evaluations rows: {len(evs)}; "
        f"correct: {sum(bool(e['correct']) for e in done)}",
        f"- evaluations with more than one attempt: {len(retried)} ({retried_text or '-'})",
        f"- distribution rows: {result['distribution_rows']}",
        "",
        "| check | result |",
        "|---|---|",
        *(f"| {name} | {'pass' if ok else '**FAIL**'} |" for name, ok in checks.items()),
    ]
    return lines, all(checks.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    started = datetime.now(UTC)
    t = time.monotonic()
    lines, ok = run()
    header = [
        "# Faults during a 20-kernel bundle: worker SIGKILL and broker restart",
        "",
        "- **Command**: `.venv/bin/python benchmarks/faults.py --out benchmarks/results/faults.md`",
        f"- **Machine**: {os.cpu_count()}-core CPU box, {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}, no GPU (shared with other engineers' test runs). "
        f"Date: {started:%Y-%m-%d %H:%M} UTC.",
        "- **Setup**: private Redis without persistence as broker, SQLite, `runserver`, one worker "
        "(`-Q eval-cpu,default -c 1`), `celery beat` running the reaper; settings "
        + ", ".join(f"`{k}={v}`" for k, v in SETTINGS.items())
        + ".",
        f"- **Wall time**: {time.monotonic() - t:.0f} s. "
        f"Overall: **{'nothing lost, nothing counted twice' if ok else 'FAILED'}**.",
        "",
    ]
    text = "\n".join(header + lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
