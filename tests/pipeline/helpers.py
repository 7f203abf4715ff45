"""Builders for bundles (zip, tar.gz, JSON, JSONL) and harness-contract result records used by the pipeline tests."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

from evaluator.harness.record import DISTRIBUTIONS, Check, Distribution, Environment, Memory, Record, Timing, TimingSide

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = REPO_ROOT / "leaderboard" / "demo"
DATA_DIR = Path(__file__).resolve().parent / "data"
DEMO_SET = "demo"


def demo_kernel(level: int, problem_id: int, sample: int = 0) -> str:
    return (DEMO_DIR / "kernels" / f"level_{level}_problem_{problem_id}_sample_{sample}_kernel.py").read_text()


def kernel_name(level: int, problem_id: int, sample: int = 0) -> str:
    return f"level_{level}_problem_{problem_id}_sample_{sample}_kernel.py"


def make_zip(files: dict[str, bytes | str], *, symlinks: tuple[str, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content.encode() if isinstance(content, str) else content)
        for name in symlinks:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16) | 0  # a symlink, as `zip --symlinks` stores it
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def make_tar(files: dict[str, bytes | str], *, gz: bool = True, special: tuple[tuple[str, bytes], ...] = ()) -> bytes:
    """`special` holds (name, tarfile type) pairs: tarfile.SYMTYPE, LNKTYPE, CHRTYPE, FIFOTYPE."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tf:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, kind in special:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = "/etc/passwd"
            tf.addfile(info)
    return buf.getvalue()


def leaderboard_json(kernels: dict[str, str], metadata: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"metadata": metadata or {"display_name": "x"}, "kernels": kernels}).encode()


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def _side(median_ms: float) -> TimingSide:
    return TimingSide(median_ms=median_ms, iqr_ms=0.01, mean_ms=0.51, calls=20, rse=0.004)


def record(*, status: str = "ok", correct: bool = True, speedup: float | None = 1.25, torch: str = "2.13.0") -> dict:
    """A result record of the harness contract (evaluator/harness/record.py), as the harness would print it."""
    fp32 = speedup * 1.1 if speedup is not None else None
    ci: list[float | None] | None = [speedup * 0.9, speedup * 1.1] if speedup is not None else None
    return Record(
        status=status,
        correct=correct,
        standard_correct=correct,
        distributions=[
            Distribution(name=name, passed=correct, max_abs_error=1e-7, max_rel_error=1e-6, trials=2)
            for name, _ in DISTRIBUTIONS
        ],
        reference_constant=False,
        speedup=speedup,
        speedup_ci=ci,
        speedup_fp32=fp32,
        timing=Timing(
            method="perf_counter",
            device_kind="cpu",
            candidate=_side(0.4),
            baseline_tf32=_side(0.5),
            baseline_fp32=_side(0.55),
        ),
        memory_ratio=1.0,
        memory=Memory(baseline_peak_bytes=4096, candidate_peak_bytes=4096),
        checks=[Check(name="output_plain_tensor", passed=True, detail="")],
        error="" if status == "ok" else f"{status} happened",
        phases={},
        environment=Environment(torch=torch, device="cpu"),
    ).to_dict()


def committed(evaluation_id: int, result: dict) -> dict:
    """`result` as the harness returns it for `evaluation_id`: committing (environment.seeds_digest) to the master
    seed the site published a digest of when it queued the evaluation, and handed to the harness."""
    from evaluator.selectors.seeds import published_commitment

    published = published_commitment(evaluation_id=evaluation_id)
    if published is not None and isinstance(result.get("environment"), dict):
        result["environment"]["seeds_digest"] = published.digest
    return result
