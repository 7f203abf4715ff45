"""Every kind of broken or cheating kernel becomes a result record with the right status, never an exception."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from evaluator.harness.sandbox.namespaces import BUILD_DIR
from evaluator.harness.sandbox.privileges import candidate_identity
from tests.conftest import processes_with

from .conftest import KERNELS, PROBLEMS, check, dist

REPO = Path(__file__).resolve().parents[2]


def assert_short(record):
    assert 0 < len(record["error"]) <= 1300, len(record["error"])


def test_no_modelnew_is_a_compile_error(evaluate):
    record = evaluate("relu", "no_modelnew")
    assert record["status"] == "compile_error" and record["correct"] is False
    assert "ModelNew" in record["error"]


def test_syntax_error_is_a_compile_error(evaluate):
    record = evaluate("relu", "syntax_error.py.txt")
    assert record["status"] == "compile_error" and record["correct"] is False
    assert "SyntaxError" in record["error"]
    assert_short(record)


def test_wrong_init_signature_is_a_runtime_error(evaluate):
    record = evaluate("relu", "wrong_init")
    assert record["status"] == "runtime_error" and record["correct"] is False
    assert "TypeError" in record["error"] and "__init__" in record["error"]


def test_wrong_shape_is_incorrect(evaluate):
    record = evaluate("relu", "wrong_shape")
    assert record["status"] == "ok" and record["correct"] is False and record["standard_correct"] is False
    assert check(record, "output_shape_dtype")["passed"] is False
    assert "(64, 256)" in check(record, "output_shape_dtype")["detail"]
    assert record["speedup"] is None  # incorrect kernels are not timed


def test_wrong_dtype_is_incorrect(evaluate):
    record = evaluate("relu", "wrong_dtype")
    assert record["correct"] is False
    assert "float64" in check(record, "output_shape_dtype")["detail"]


def test_raising_forward_is_a_runtime_error_with_a_short_message(evaluate):
    record = evaluate("relu", "raising")
    assert record["status"] == "runtime_error" and record["correct"] is False
    assert "boom" in record["error"]
    assert_short(record)


@pytest.mark.parametrize(
    ("kernel", "status"), [("relu_cuda_inline", "compile_error"), ("relu_moves_to_cuda", "runtime_error")]
)
def test_a_cuda_kernel_on_the_cpu_says_it_needs_a_gpu_first(evaluate, kernel, status):
    record = evaluate("relu", kernel)
    assert record["status"] == status and record["correct"] is False
    assert record["error"].startswith("this kernel needs a CUDA GPU and was evaluated on the CPU"), record["error"]
    assert_short(record)


def test_a_cpu_failure_in_other_words_gets_no_gpu_hint(evaluate):
    assert "CUDA GPU" not in evaluate("relu", "raising")["error"]


def test_os_exit_is_a_runtime_error(evaluate):
    record = evaluate("relu", "os_exit")
    assert record["status"] == "runtime_error" and record["correct"] is False
    assert "exited with code 0" in record["error"]


@pytest.mark.slow  # waits out a 12 s timeout by design
def test_infinite_loop_times_out_and_the_whole_group_dies(evaluate, tmp_path):
    marker = f"kbv-grandchild-{uuid.uuid4().hex}"
    kernel = (KERNELS / "infinite_loop.py").read_text().replace("__MARKER__", marker)
    started = time.monotonic()
    record = evaluate("relu", kernel_source=kernel, timeout=12)
    assert time.monotonic() - started < 60
    assert record["status"] == "timeout" and record["correct"] is False
    assert "timed out" in record["error"]
    time.sleep(0.5)
    assert not processes_with(marker), "the kernel's grandchild survived the evaluation"


@pytest.mark.slow  # starts the real harness
def test_forged_json_on_stdout_is_ignored(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.harness",
            str(PROBLEMS / "relu.py"),
            str(KERNELS / "forged_stdout.py"),
            "--device",
            "cpu",
            "--quick",
            "--json",
            "--work-root",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["correct"] is False and record["speedup"] != 1000.0
    assert record["harness_version"]
    assert dist(record, "D1")["passed"] is False


def test_patching_allclose_and_perf_counter_is_rejected(evaluate):
    record = evaluate("relu", "patch_timers")
    assert record["status"] == "rejected" and record["correct"] is False
    detail = check(record, "timer_integrity")["detail"]
    assert "torch.allclose" in detail and "time.perf_counter" in detail


def test_returning_the_input_is_rejected_as_alias(evaluate):
    record = evaluate("relu", "return_input")
    assert record["status"] == "rejected" and record["correct"] is False
    assert check(record, "output_no_alias")["passed"] is False


def test_returning_a_view_of_a_mutated_input_is_rejected(evaluate):
    record = evaluate("relu", "return_view")
    assert record["status"] == "rejected"
    assert check(record, "output_no_alias")["passed"] is False
    assert check(record, "inputs_unchanged")["passed"] is False


def test_mutating_inputs_is_rejected(evaluate):
    record = evaluate("relu", "mutate_inputs")
    assert record["status"] == "rejected" and record["correct"] is False
    assert check(record, "inputs_unchanged")["passed"] is False


def test_tensor_subclass_output_is_rejected(evaluate):
    record = evaluate("relu", "subclass_output")
    assert record["status"] == "rejected" and record["correct"] is False
    assert check(record, "output_plain_tensor")["passed"] is False
    assert "LazyTensor" in check(record, "output_plain_tensor")["detail"]


def test_memory_bomb_hits_the_host_memory_limit(evaluate):
    record = evaluate("relu", "memory_bomb", host_memory_mb=1024)
    assert record["status"] == "runtime_error" and record["correct"] is False
    assert "memory" in record["error"].lower()
    assert_short(record)


def test_background_thread_is_rejected(evaluate):
    record = evaluate("relu", "background_thread")
    assert record["status"] == "rejected"
    assert check(record, "thread_count")["passed"] is False
    assert "deferred-work" in check(record, "thread_count")["detail"]


def test_candidate_environment_is_scrubbed_and_private(evaluate, tmp_path, monkeypatch):
    for name in ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "SOME_TOKEN"):
        monkeypatch.setenv(name, "leak-me")
    record = evaluate("relu", kernel_source=(KERNELS / "env_probe.py").read_text())
    assert record["status"] == "compile_error" and "SEEN " in record["error"], record["error"]
    seen = json.JSONDecoder().raw_decode(record["error"].split("SEEN ", 1)[1])[0]
    expected = candidate_identity()
    uid = record["environment"]["candidate_uid"]
    assert (uid is None) == (expected is None)
    if expected:  # the evaluator is root: the kernel is this evaluation's own user, without root's groups
        assert seen["uid"] == uid and set(seen["groups"]) <= {uid}
    else:
        assert seen["uid"] == os.getuid()
    assert not {"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "SOME_TOKEN"} & set(
        seen["keys"]
    )
    assert seen["leaks"] == []
    assert seen["home"] == seen["cwd"] and "candidate" in seen["cwd"]
    # its extension builds go to its own folder: directly, or (sandboxed) at BUILD_DIR, a bind of a folder inside it
    assert seen["extensions"].startswith(seen["cwd"]) or seen["extensions"] == BUILD_DIR
    assert os.getcwd() != seen["cwd"]
