"""The environment of every harness process (the launcher, the orchestrator, the workers), built from scratch: tool
locations and GPU selection may cross from the caller, never credentials or Django settings. stdlib only and no other
import: the launcher (sandbox/launcher/) checks every variable a request names against ENV_PASSTHROUGH."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HARNESS_USER = "evaluation"
ENV_PASSTHROUGH = (
    "PATH",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "TORCH_CUDA_ARCH_LIST",
    "MAX_JOBS",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "LANG",
)


def harness_env(home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed variables of `base` (default: this process's), a HOME of its own and this repository on
    the path: the start of every harness process's environment."""
    source = os.environ if base is None else base
    env = {key: source[key] for key in ENV_PASSTHROUGH if key in source}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        HOME=str(home),
        # the harness's uids have no passwd entry: libraries that ask getpass.getuser() (torch's inductor, for its
        # cache folder on CUDA) read these instead of failing the lookup (seen on the H100: every reference warm-up)
        USER=HARNESS_USER,
        LOGNAME=HARNESS_USER,
        PYTHONPATH=str(REPO_ROOT),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONNOUSERSITE="1",
    )
    return env


def worker_env(
    *, private_dir: Path, extensions_dir: Path | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A worker's environment: harness_env with its private folder as HOME and TMPDIR's parent, and its build
    folders."""
    env = harness_env(private_dir, base)
    env.update(
        TMPDIR=str(private_dir / "tmp"),
        # an idle worker's OpenMP threads sleep at once instead of spinning into its partner's timed block
        # (candidate_cpu.py counts the kernel's CPU time there); both workers alike, so the ratio stays fair
        OMP_WAIT_POLICY="PASSIVE",
        # torch.compile builds in the worker itself, not in inductor's pool of compile processes: the pool's reader
        # thread would fail an honest kernel's thread check, and its processes would outlive the worker
        TORCHINDUCTOR_COMPILE_THREADS="1",
    )
    build = extensions_dir or (private_dir / "torch_extensions")
    env["TORCH_EXTENSIONS_DIR"] = str(build)
    env["TRITON_CACHE_DIR"] = str(build / "triton")
    return env
