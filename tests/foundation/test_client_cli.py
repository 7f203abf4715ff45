"""The command-line client as a newcomer meets it: `--json` is JSON only, a duplicate upload is said as such, the
progress line redraws cleanly on a terminal and is plain lines elsewhere, errors are whole, the exit code says
whether every kernel passed, and `kbv bundle` turns a KernelBench run folder into a bundle the server accepts."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

import client.__main__ as cli


def kernel(**kw):
    base = {"evaluation_id": 1, "level": 1, "problem_id": 1, "sample": 0, "status": "done", "result_status": "ok",
            "correct": True, "speedup": 1.5, "error": ""}  # fmt: skip
    return {**base, **kw}


def submission(kernels, status="done"):
    correct = sum(1 for k in kernels if k.get("correct"))
    progress = {"total": len(kernels), "done": len(kernels), "correct": correct, "kernels": kernels}
    return {"id": 7, "url": "http://x/api/submissions/7/", "page_url": "http://x/submissions/7/", "status": status,
            "kernel_count": len(kernels), "correct_count": correct, "evaluated_count": len(kernels),
            "progress": progress}  # fmt: skip


CREATED = {"id": 7, "url": "http://x/api/submissions/7/", "page_url": "http://x/submissions/7/", "status": "queued",
           "kernel_count": 2, "problem_set": "demo", "hardware": "cpu", "duplicate": False,
           "report": [{"name": "run/notes.txt", "status": "skipped", "reason": "not a kernel file"}]}  # fmt: skip


@pytest.fixture
def server(monkeypatch):
    """post_multipart answers `created`; get_json answers `final` (and each evaluation's detail)."""
    state = {"created": dict(CREATED), "final": submission([kernel(), kernel(evaluation_id=2, sample=1)])}
    monkeypatch.setattr(cli, "post_multipart", lambda url, **kw: state["created"])
    monkeypatch.setattr(
        cli, "get_json", lambda url, **kw: state["final"] if url.endswith("/7/") else {"distributions": []}
    )
    return state


def run(capsys, tmp_path, *args):
    (tmp_path / "run.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    code = cli.main(["submit", str(tmp_path / "run.zip"), "--llm", "m", "--token", "t", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_prints_one_json_document_and_nothing_else(server, capsys, tmp_path):
    code, out, _ = run(capsys, tmp_path, "--json")
    assert code == 0 and json.loads(out)["id"] == 7
    code, out, err = run(capsys, tmp_path, "--json", "--wait", "--interval", "0")
    assert code == 0 and json.loads(out)["status"] == "done" and err == ""


def test_a_duplicate_upload_is_said_to_be_one(server, capsys, tmp_path):
    server["created"]["duplicate"] = True
    _, out, _ = run(capsys, tmp_path)
    assert out.startswith("duplicate: submission 7") and "kernels queued" not in out
    server["created"]["duplicate"] = False
    _, out, _ = run(capsys, tmp_path)
    assert "2 kernels queued on cpu (problem set demo), 1 files skipped" in out


def test_exit_code_is_zero_only_when_every_kernel_passed(server, capsys, tmp_path):
    assert run(capsys, tmp_path, "--wait", "--interval", "0")[0] == 0
    server["final"] = submission([kernel(), kernel(evaluation_id=2, correct=False, speedup=0.3)])
    assert run(capsys, tmp_path, "--wait", "--interval", "0")[0] == cli.EXIT_NOT_ALL_PASSED
    assert cli.main(["status", "7"]) == cli.EXIT_NOT_ALL_PASSED


def test_errors_are_printed_whole(server, capsys, tmp_path):
    long_error = "Traceback: " + "/very/long/path/" * 30 + "kernel.py line 3\nRuntimeError: boom"
    server["final"] = submission([kernel(correct=False, result_status="runtime_error", error=long_error)])
    code, out, _ = run(capsys, tmp_path, "--wait", "--interval", "0")
    assert code == cli.EXIT_NOT_ALL_PASSED
    assert "/very/long/path/" * 30 + "kernel.py line 3" in out and "RuntimeError: boom" in out


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_in_place_on_a_terminal_and_fits_its_width(server, monkeypatch):
    monkeypatch.setattr(cli.shutil, "get_terminal_size", lambda fallback=None: __import__("os").terminal_size((40, 24)))
    out = Terminal()
    cli.wait("http://x/api/submissions/7/", None, interval=0, timeout=5, out=out)
    text = out.getvalue()
    assert text.startswith("\r\x1b[2K") and text.endswith("\n")
    assert all(len(line) < 40 for line in text.replace("\x1b[2K", "").strip("\n").split("\r") if line)


def test_progress_is_plain_lines_off_a_terminal(server):
    out = io.StringIO()
    cli.wait("http://x/api/submissions/7/", None, interval=0, timeout=5, out=out)
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert out.getvalue().count("\n") == 1


def test_bundle_zips_a_kernelbench_run_folder_the_server_accepts(tmp_path, capsys):
    from leaderboard.bundles import parse_bundle

    run_folder = tmp_path / "runs" / "my_run"
    (run_folder / "sub").mkdir(parents=True)
    (run_folder / "level_1_problem_1_sample_0_kernel.py").write_text("class ModelNew: pass\n")
    (run_folder / "sub" / "level_1_problem_2_sample_1_kernel.py").write_text("class ModelNew: pass\n")
    (run_folder / "level_1_problem_1_sample_0_prompt.txt").write_text("not a kernel")
    (run_folder / "eval_results.json").write_text("{}")
    out = tmp_path / "run.zip"
    assert cli.main(["bundle", str(run_folder), "-o", str(out)]) == 0
    assert "2 kernels and eval_results.json" in capsys.readouterr().out
    assert sorted(zipfile.ZipFile(out).namelist()) == [
        "my_run/eval_results.json", "my_run/level_1_problem_1_sample_0_kernel.py",
        "my_run/level_1_problem_2_sample_1_kernel.py",
    ]  # fmt: skip
    parsed = parse_bundle(filename="run.zip", data=out.read_bytes())
    assert sorted((e.level, e.problem_id, e.sample) for e in parsed.entries) == [(1, 1, 0), (1, 2, 1)]
    assert cli.main(["bundle", str(tmp_path / "empty-missing")]) == cli.EXIT_NO_KERNEL


def test_json_with_the_server_down_prints_a_json_error_on_stdout(capsys, tmp_path):
    """A real connection to a port nobody listens on: stdout is still one JSON document, saying what went wrong."""
    import socket

    with socket.socket() as probe:  # a free port, closed again: nothing answers there
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    (tmp_path / "run.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    for argv in (["submit", str(tmp_path / "run.zip"), "--llm", "m"], ["status", "7"]):
        code = cli.main([*argv, "--url", url, "--token", "t", "--json"])
        out = capsys.readouterr()
        assert code == cli.EXIT_UNREACHABLE
        answer = json.loads(out.out)
        assert answer["url"] == url and answer["exit_code"] == cli.EXIT_UNREACHABLE
        assert answer["error"].startswith(f"cannot reach the server at {url}")
        assert "urlopen error" not in out.err and out.err.startswith("error: cannot reach the server")


def test_a_wait_that_runs_out_says_the_submission_is_still_running_not_that_the_server_is_silent(
    server, capsys, tmp_path
):
    # seen on the GPU (scripts/gpu_e2e.py, 2026-12-05): "the server ... did not answer in time" while it answered
    server["final"] = submission([kernel(), kernel(evaluation_id=2, status="running", correct=None)], "running")
    code, _, err = run(capsys, tmp_path, "--wait", "--interval", "0", "--timeout", "0")
    assert code == cli.EXIT_UNREACHABLE
    assert "did not answer" not in err
    assert "submission 7 is still running after 0 s of waiting (--timeout)" in err and "kbv status 7" in err
    code, out, _ = run(capsys, tmp_path, "--json", "--wait", "--interval", "0", "--timeout", "0")
    answer = json.loads(out)
    assert answer["still_running"]["status"] == "running" and answer["exit_code"] == cli.EXIT_UNREACHABLE
