"""End to end: real `runserver` + real `celery worker` subprocesses + the real harness, driven by the CLI client.

Embedded defaults (SQLite file + filesystem broker) need no server. The Redis + PostgreSQL variant is marked
`services` and skips when either server is unreachable.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import processes_in
from tests.pipeline.helpers import DATA_DIR, demo_kernel, kernel_name, make_zip
from tests.pipeline.stack import Stack, reachable

pytestmark = pytest.mark.slow
WAIT_S = 400


def write_bundle(tmp_path: Path, *kernels: tuple[int, int, int]) -> Path:
    path = tmp_path / "run.zip"
    path.write_bytes(make_zip({f"run/{kernel_name(*k)}": demo_kernel(*k) for k in kernels}))
    return path


def submit_and_wait(stack: Stack, bundle: Path) -> dict:
    args = ["--llm", "e2e-llm", "--problem-set", "demo", "--hardware", stack.hardware]
    done = stack.client("--json", "submit", str(bundle), *args, "--wait", "--interval", "1", "--timeout", str(WAIT_S))
    # exit 3: not every kernel passed (the bundles here hold incorrect kernels on purpose)
    assert done.returncode in (0, 3), (
        f"{done.stdout}\n{done.stderr}\n--- worker ---\n{stack.log('worker')}"
    )  # 3: not all passed
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_exactly_once(stack: Stack, finals: list[dict]) -> None:
    facts = stack.db_facts([f["id"] for f in finals])
    kernels = sum(f["kernel_count"] for f in finals)
    assert facts["kernel_rows"] == kernels
    assert [s["evaluated"] for s in facts["submissions"]] == [f["kernel_count"] for f in finals]
    assert all(s["status"] == "done" for s in facts["submissions"])
    assert len(facts["evaluations"]) == kernels and all(e["status"] == "done" for e in facts["evaluations"])
    # Each evaluation stored its four distributions once (D1-D4), not once per delivery.
    assert facts["distribution_rows"] == 4 * kernels


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One deployment for the embedded tests (booting one costs ~10 s); tests filter by their own submissions."""
    # The deployment serves the labels of the extra worker pools some tests start (EVALUATOR_HARDWARE_LABELS).
    stack = Stack(tmp_path_factory.mktemp("embedded"), env={"EVALUATOR_HARDWARE_LABELS": "cpu,cpu-broken,cpu-prestart"})
    try:
        stack.setup()
        stack.start_web()
        stack.start_worker("worker")
        yield stack
    finally:
        stack.stop()


def test_embedded_defaults_same_bundle_twice_is_one_submission(embedded: Stack, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, (1, 1, 0))
    first = submit_and_wait(embedded, bundle)
    second = submit_and_wait(embedded, bundle)  # the same bytes again: the API answers with the first submission
    assert first["id"] == second["id"]
    assert (second["status"], second["kernel_count"], second["evaluated_count"], second["correct_count"]) == (
        "done", 1, 1, 1
    )  # fmt: skip
    assert_exactly_once(embedded, [first])


def test_worker_killed_mid_evaluation_completes_exactly_once(embedded: Stack, tmp_path: Path) -> None:
    bundle = tmp_path / kernel_name(1, 1)
    bundle.write_text((DATA_DIR / "slow_relu_kernel.py").read_text())
    created = embedded.client("--json", "submit", str(bundle), "--llm", "e2e-llm", "--problem-set", "demo")
    assert created.returncode == 0, created.stderr
    sub_id = json.loads(created.stdout.strip().splitlines()[-1])["id"]
    deadline = time.monotonic() + 120
    while embedded.get(f"/api/submissions/{sub_id}/")["progress"]["running"] != 1:
        assert time.monotonic() < deadline, embedded.log("worker")
        time.sleep(0.3)
    embedded.kill("worker")  # SIGKILL mid-evaluation: the row stays RUNNING, nobody acks or requeues
    (evaluation,) = embedded.db_facts([sub_id])["evaluations"]
    assert (evaluation["status"], evaluation["attempts"]) == ("running", 1)

    out = embedded.manage("reap_evaluations", "--stale-after", "0")
    assert f"requeued 1: [{evaluation['id']}]" in out
    embedded.start_worker("worker")
    waited = embedded.client("--json", "status", str(sub_id))
    deadline = time.monotonic() + WAIT_S
    while json.loads(waited.stdout)["status"] != "done":
        assert time.monotonic() < deadline, embedded.log("worker")
        time.sleep(1)
        waited = embedded.client("--json", "status", str(sub_id))
    final = json.loads(waited.stdout)
    facts = embedded.db_facts([sub_id])
    (evaluation,) = facts["evaluations"]
    assert (evaluation["status"], evaluation["attempts"], evaluation["is_current"]) == ("done", 2, True)
    assert evaluation["result_status"] in {"ok", "rejected"}
    assert (final["evaluated_count"], final["kernel_count"]) == (1, 1)
    assert facts["distribution_rows"] in {0, 4}


def test_infra_errors_are_retried_on_the_same_queue_then_given_up(embedded: Stack, tmp_path: Path) -> None:
    # A worker for another hardware label whose harness interpreter does not exist: every attempt is an InfraError.
    embedded.start_worker(
        "broken", hardware="cpu-broken", env={"EVALUATOR_PYTHON": "/nonexistent/python", "EVALUATOR_MAX_ATTEMPTS": "2"}
    )
    args = ["--llm", "e2e-llm", "--problem-set", "demo", "--hardware", "cpu-broken"]
    done = embedded.client("--json", "submit", str(write_bundle(tmp_path, (1, 3, 0))), *args, "--wait", "--interval",
                           "1", "--timeout", str(WAIT_S))  # fmt: skip
    assert done.returncode in (0, 3), f"{done.stderr}\n{embedded.log('broken')}"  # 3: not every kernel passed
    final = json.loads(done.stdout.strip().splitlines()[-1])
    (evaluation,) = embedded.db_facts([final["id"]])["evaluations"]
    assert (final["status"], final["evaluated_count"], final["correct_count"]) == ("failed", 1, 0)
    assert (evaluation["status"], evaluation["attempts"]) == ("failed", 2)
    assert "gave up after 2 attempts" in final["progress"]["kernels"][0]["error"]


def test_a_prestarting_worker_evaluates_through_standbys_and_leaves_nothing_behind(
    embedded: Stack, tmp_path: Path
) -> None:
    """EVALUATOR_PRESTART=True in a real Celery worker: after the first kernel, each evaluation runs in the harness the
    worker started while the previous one ran; when the worker dies, its standby goes too."""
    embedded.start_worker("prestart", hardware="cpu-prestart", env={"EVALUATOR_PRESTART": "True"})
    args = ["--llm", "e2e-llm", "--problem-set", "demo", "--hardware", "cpu-prestart"]
    bundle = write_bundle(tmp_path, (1, 1, 0), (1, 2, 0), (1, 3, 0))
    done = embedded.client("--json", "submit", str(bundle), *args, "--wait", "--interval", "1", "--timeout",
                           str(WAIT_S))  # fmt: skip
    assert done.returncode in (0, 3), f"{done.stderr}\n{embedded.log('prestart')}"  # 3: not every kernel passed
    final = json.loads(done.stdout.strip().splitlines()[-1])
    assert (final["status"], final["evaluated_count"], final["correct_count"]) == ("done", 3, 3)
    code = (
        "import json; from evaluator.models import Evaluation; "
        f"print(json.dumps([bool(e.result['environment'].get('prestarted_workers')) for e in "
        f"Evaluation.objects.filter(kernel__submission={final['id']}).order_by('finished_at')]))"
    )
    prestarted = json.loads(embedded.manage("shell", "-c", code).strip().splitlines()[-1])
    assert prestarted == [False, True, True]
    work = embedded.root / "var" / "work"
    assert len(processes_in(work)) == 3  # the parked standby: its harness and both workers
    embedded.kill("prestart")  # SIGKILL: no atexit; the standby sees its go pipe close
    deadline = time.monotonic() + 30
    while processes_in(work) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert processes_in(work) == []


@pytest.mark.services
def test_redis_and_postgresql(tmp_path: Path) -> None:
    if not (reachable(6379) and reachable(5432)):
        pytest.skip("Redis (6379) or PostgreSQL (5432) is not reachable")
    psycopg = pytest.importorskip("psycopg")
    admin_url = os.getenv("PIPELINE_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/test")
    dbname = f"kbv_pipeline_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{dbname}"')
    except psycopg.Error as exc:
        pytest.skip(f"cannot create a scratch database on PostgreSQL: {exc}")
    # A unique hardware label gives this run its own Redis queue, so parallel runs cannot steal each other's work.
    hardware = f"cpu-e2e{uuid.uuid4().hex[:6]}"
    stack = Stack(
        tmp_path,
        hardware=hardware,
        env={
            "DATABASE_URL": admin_url.rsplit("/", 1)[0] + f"/{dbname}",
            "CELERY_BROKER_URL": os.getenv("PIPELINE_REDIS_URL", "redis://127.0.0.1:6379/15"),
        },
    )
    try:
        stack.setup()
        stack.start_web()
        stack.start_worker("worker")
        final = submit_and_wait(stack, write_bundle(tmp_path, (1, 1, 0), (1, 2, 1)))
        assert (final["status"], final["evaluated_count"], final["correct_count"]) == ("done", 2, 1)
        # L1/1 sample 0 is the demo's correct ReLU; L1/2 sample 1 is its constant-output hack.
        verdicts = {(k["problem_id"], k["sample"]): k["correct"] for k in final["progress"]["kernels"]}
        assert verdicts == {(1, 0): True, (2, 1): False}
        assert_exactly_once(stack, [final])
    finally:
        stack.stop()
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def test_client_reports_a_rejected_bundle_and_exits_1(embedded: Stack, tmp_path: Path) -> None:
    bad = tmp_path / "run.zip"
    bad.write_bytes(make_zip({f"run/{kernel_name(9, 9)}": demo_kernel(1, 1), "run/notes.txt": "hi"}))
    done = embedded.client("submit", str(bad), "--llm", "e2e-llm", "--problem-set", "demo")
    assert done.returncode == 1
    assert "rejected (HTTP 400): No kernel in the bundle matches" in done.stderr
    assert "unknown problem L9/9 in problem set demo" in done.stderr and "run/notes.txt: skipped" in done.stderr
    unreachable = Stack(tmp_path)  # nothing listens on its port
    assert unreachable.client("status", "1").returncode == 2
