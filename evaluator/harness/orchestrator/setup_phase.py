"""The setup phase of an evaluation: the reference built on the device, the kernel compiled
and imported (through the per-machine compile cache), and the output hand-over chosen.

stdlib only, like the orchestrator.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.harness.errors import CandidateFailed, HarnessInfraError
from evaluator.harness.orchestrator.compile_cache import CacheEntry, cache_key, evict
from evaluator.harness.orchestrator.context import Context
from evaluator.harness.orchestrator.verdict import integrity
from evaluator.harness.sandbox.namespaces import BUILD_DIR


def survey(ctx: Context) -> None:
    """Copy the problem into the reference worker's folder and have it counted on the meta device: the footprint
    and the parameters' size the evaluation's memory is admitted by (gpu_holds.py), known before any worker touches
    the GPU."""
    problem = ctx.folders.ref / "problem.py"
    shutil.copyfile(ctx.spec.problem_path, problem)
    # What was evaluated, named in the record: a reproduction checks it against the problem it runs (reproduce.py).
    ctx.record.environment.problem_sha256 = hashlib.sha256(problem.read_bytes()).hexdigest()
    surveyed = ctx.ref.survey(problem_path=str(problem), init_path=str(ctx.folders.init_file))
    ctx.footprint, ctx.counts = surveyed.get("footprint_bytes"), surveyed.get("counts")


def prepare(ctx: Context) -> None:
    """Copy the kernel into the hand-over folder, build the reference on the device, compile and import the
    kernel (the problem was copied and counted by survey())."""
    f = ctx.folders
    # The kernel's file goes into the hand-over folder (ours, read-only to the kernel), never into its own folder:
    # nothing of ours is written where the kernel could have planted a link.
    shutil.copyfile(ctx.spec.kernel_path, f.kernel_file)
    ctx.kernel_source = f.kernel_file.read_text(errors="replace")
    ctx.kernel_sha = hashlib.sha256(ctx.kernel_source.encode()).hexdigest()
    setup = build_reference(ctx)
    ctx.info = setup["info"]
    ctx.footprint = setup.get("footprint_bytes")
    ctx.counts = setup.get("counts")
    ctx.phase("start", ctx.deadline.start)  # workers spawned, torch imported, the reference built on the device
    started = time.monotonic()
    try:
        build = import_kernel(ctx)
    finally:
        ctx.phase("compile", started)
    env = ctx.record.environment
    env.compile_cache, env.load_limit_s, env.compile_limit_s = (
        build.cache_state,
        ctx.cand.load_limit_s,
        ctx.cand.build_limit_s,
    )
    if build.stored is not None:
        env.compile_cache_store = build.stored
    ctx.record.phases["compile_import"] = round(build.compile_s, 3)
    integrity(ctx, "after import")
    if ctx.opts.compile_only:
        ctx.record.status = "ok"
        ctx.record.error = "compile only: nothing else was run"
        raise CandidateFailed("compile only")


@dataclass
class Build:
    """What importing the kernel learned: the compile cache's answer, the worker's own import time, and what was
    stored (None: nothing)."""

    cache_state: str
    compile_s: float
    stored: Any = None


def build_reference(ctx: Context) -> dict[str, Any]:
    """The reference Model built on the device in the reference worker (the problem file in its folder)."""
    return ctx.ref.setup(
        problem_path=str(ctx.folders.ref / "problem.py"),
        device=ctx.device,
        init_path=str(ctx.folders.init_file),
        gpu_memory_fraction=ctx.opts.gpu_memory_fraction,
    )


def import_kernel(ctx: Context) -> Build:
    """Import the kernel in its worker (compiling its extensions), with the compile cache's entry locked from the
    check to the store. The kernel builds in its own build folder (folders.build, which it sees at BUILD_DIR); the
    cache is ours and never visible to it: a hit is copied in before the import, a fresh build's products copied
    out after it, both through descriptors (beneath.py). A later process pair's import (bring_up.fresh_pair) finds
    the build where the first left it, or copies it anew from the cache; only the first import's figures are
    recorded (prepare)."""
    f = ctx.folders
    sandboxed = ctx.workers.sandbox == "namespaces"
    ext_dir = Path(BUILD_DIR) if sandboxed else f.build
    cache_state = "disabled"
    if ctx.opts.build_from_source:
        cache_state = "not used (build_from_source: a re-run or reproduction builds from the kernel's source)"
    elif ctx.spec.compile_cache_dir and not sandboxed:
        # without a mount namespace the build folder's path differs per evaluation, so a copied build would not
        # be up to date for ninja; and the cache must never be a folder the kernel can write
        cache_state = f"off ({ctx.workers.sandbox} sandbox: builds are cached only under the namespaces sandbox)"
    elif ctx.spec.compile_cache_dir:
        key = cache_key(
            source=ctx.kernel_source,
            torch_version=ctx.info["torch"],
            cuda_version=ctx.info["cuda"],
            arch=ctx.info["arch"],
        )
        ctx.cache = CacheEntry(ctx.workers.cache_fd(), key)  # the cache folder by descriptor (launch.Workers)
        if not ctx.cache.acquire(max(ctx.left() - 5, 1)):
            raise HarnessInfraError("compile cache entry stayed locked")
        cache_state = "hit" if ctx.cache.check_hit() else "miss"
        if cache_state == "hit":
            with _build_dir(ctx, fresh=True) as build_fd:
                ctx.cache.copy_into(build_fd)
    try:  # bounded by load_timeout_s of its own, plus the time it is seen compiling (clients.step_bound)
        loaded = ctx.cand.load(
            kernel_path=str(f.kernel_file),
            device=ctx.device,
            init_path=str(f.init_file),
            extensions_dir=str(ext_dir),
            suffix=(ctx.kernel_sha or "")[:12],
            gpu_memory_fraction=ctx.opts.gpu_memory_fraction,
        )
    except CandidateFailed:
        if ctx.cache:
            ctx.cache.release()
        raise
    stored = None
    if ctx.cache is not None:
        if cache_state == "miss":
            with _build_dir(ctx) as build_fd:
                cap, files = ctx.opts.compile_cache_entry_mb << 20, ctx.opts.compile_cache_entry_files
                stored = ctx.cache.store(build_fd, loaded["compile_s"], max_entry_bytes=cap, max_entry_files=files)
            max_bytes, max_files = ctx.opts.compile_cache_max_mb << 20, ctx.opts.compile_cache_max_files
            evict(ctx.cache.root, max_bytes, keep=ctx.cache.key, max_total_files=max_files)
        ctx.cache.release()
    ctx.state_entries = loaded["state"]
    return Build(cache_state, float(loaded["compile_s"]), stored)


@contextlib.contextmanager
def _build_dir(ctx: Context, *, fresh: bool = False) -> Iterator[int]:
    """A descriptor of the kernel's build folder (launch.Workers.build_dir: never a path the kernel could have
    swapped), emptied first when `fresh`."""
    build_fd = ctx.workers.build_dir(fresh=fresh)
    try:
        yield build_fd
    finally:
        os.close(build_fd)


def handover(ctx: Context) -> None:
    """Give the candidate the problem's get_inputs (inputs are regenerated from seeds on both sides, never
    shipped) and pick how outputs travel back: CUDA IPC when the reference can open the candidate's handles."""
    ctx.cand.set_problem(Path(ctx.spec.problem_path).read_text())
    chosen, reasons = "file", ["cpu device"] if not ctx.cuda else []
    fd_socks = ctx.workers.fd_socks
    if fd_socks is not None:  # zero-copy across the sandbox: a shared buffer passed as a file descriptor
        cand_fd, ref_fd = fd_socks  # the socket's number in each worker (launch.Workers)
        offer = ctx.cand.probe_handover(fd_socket=cand_fd)
        if offer.get("desc"):
            probe = ctx.ref.probe_handover(offer["desc"], fd_socket=ref_fd)
            chosen = "cuda_fd" if probe.get("opened") else chosen
            reasons.append(f"cuda_fd: {probe.get('reason')}")
        else:
            reasons.append(f"cuda_fd: {offer.get('reason')}")
    if ctx.cuda and chosen == "file":  # legacy CUDA IPC handles: same user and namespaces only
        desc = ctx.cand.probe_handover()["desc"]
        probe = ctx.ref.probe_handover(desc)
        chosen = "cuda_ipc" if probe.get("opened") else chosen
        reasons.append(f"cuda_ipc: {probe.get('reason')}")
    if ctx.cuda:
        ctx.cand.use_handover(chosen)
    ctx.ipc = chosen != "file"
    used = chosen if ctx.ipc else f"file ({'; '.join(str(r) for r in reasons) or 'probe failed'})"
    # chosen again by every later process pair: what the first pair (correctness) used stays, a different choice of
    # a later one is added to it, never put in its place
    env = ctx.record.environment
    before = env.output_handover
    env.output_handover = used if before in (None, used) or used in str(before) else f"{before}; later pair: {used}"
