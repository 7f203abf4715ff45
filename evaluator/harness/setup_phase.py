"""The setup phase of an evaluation: the reference built on the device, the kernel compiled
and imported (through the per-machine compile cache), and the output hand-over chosen.

stdlib only, like the orchestrator.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

from evaluator.harness.compile_cache import CacheEntry, cache_key
from evaluator.harness.context import Context
from evaluator.harness.errors import CandidateFailed, HarnessInfraError
from evaluator.harness.namespaces import BUILD_DIR
from evaluator.harness.privileges import give_to, open_path, take_back
from evaluator.harness.verdict import integrity


def prepare(ctx: Context) -> None:
    """Copy the problem and kernel into the workers' folders, build the reference, compile and import the kernel."""
    f = ctx.folders
    problem = f.ref / "problem.py"
    kernel = f.cand / "kernel.py"
    shutil.copyfile(ctx.spec.problem_path, problem)
    shutil.copyfile(ctx.spec.kernel_path, kernel)  # readable by the candidate's user; its folder stays its own
    ctx.kernel_source = kernel.read_text(errors="replace")
    ctx.kernel_sha = hashlib.sha256(ctx.kernel_source.encode()).hexdigest()
    setup = ctx.ref.setup(
        problem_path=str(problem),
        device=ctx.device,
        init_path=str(f.io / "init.pt"),
        gpu_memory_fraction=ctx.opts.gpu_memory_fraction,
    )
    ctx.info = setup["info"]
    ctx.footprint = setup.get("footprint_bytes")
    ctx.counts = setup.get("counts")
    ctx.phase("start", ctx.deadline.start)  # workers spawned, torch imported, the reference built on the device
    _compile(ctx)
    integrity(ctx, "after import")
    if ctx.opts.compile_only:
        ctx.record["status"] = "ok"
        ctx.record["error"] = "compile only: nothing else was run"
        raise CandidateFailed("compile only")


def _compile(ctx: Context) -> None:
    """Import the kernel in its worker (compiling its extensions), with the compile cache's entry locked around it."""
    started = time.monotonic()
    f = ctx.folders
    ext_dir = f.cand / "torch_extensions"
    sandboxed = ctx.workers.sandbox == "namespaces"
    ident = ctx.workers.ident
    cache_state = "disabled"
    if ctx.spec.compile_cache_dir:
        key = cache_key(
            source=ctx.kernel_source,
            torch_version=ctx.info["torch"],
            cuda_version=ctx.info["cuda"],
            arch=ctx.info["arch"],
        )
        ctx.cache = CacheEntry(Path(ctx.spec.compile_cache_dir), key)
        if not ctx.cache.acquire(max(ctx.left() - 5, 1)):
            raise HarnessInfraError("compile cache entry stayed locked")
        cache_state = "hit" if ctx.cache.check_hit() else "miss"
        if sandboxed:
            # The kernel never sees the cache: a hit is copied into its own build folder, which it sees at one
            # fixed path (BUILD_DIR) in every evaluation, so ninja finds the copied build up to date.
            ext_dir = Path(BUILD_DIR)
            if cache_state == "hit":
                shutil.copytree(ctx.cache.build_dir, f.cand / "build", symlinks=True, dirs_exist_ok=True)
                give_to(f.cand / "build", ident)
        else:
            ext_dir = ctx.cache.build_dir
            open_path(ext_dir, ident)
            give_to(ext_dir, ident)  # torch writes a lock file and build.ninja there even on a hit
    elif sandboxed:
        ext_dir = Path(BUILD_DIR)
    ctx.record["environment"]["compile_cache"] = cache_state
    try:
        loaded = ctx.cand.load(
            kernel_path=str(f.cand / "kernel.py"),
            device=ctx.device,
            init_path=str(f.io / "init.pt"),
            extensions_dir=str(ext_dir),
            suffix=(ctx.kernel_sha or "")[:12],
            gpu_memory_fraction=ctx.opts.gpu_memory_fraction,
        )
    except CandidateFailed:
        if ctx.cache:
            ctx.cache.discard()
        raise
    finally:
        ctx.phase("compile", started)
    if ctx.cache and sandboxed:
        _cache_sandboxed_build(ctx, cache_state, loaded["compile_s"])
    elif ctx.cache:
        # Built: from now on the kernel cannot change the entry, except triton/, which Triton only fills at the
        # first call (its files are not in the manifest, so anything there makes the next check a rebuild).
        take_back(ctx.cache.build_dir, ident)
        give_to(ctx.cache.build_dir / "triton", ident)
        if cache_state == "miss":
            ctx.cache.commit(loaded["compile_s"])
        ctx.cache.release()
        if not any(p.name not in ("lock", "triton") for p in ctx.cache.build_dir.iterdir()):
            # Nothing was built at import: a kernel that calls load_inline on its first forward() builds into
            # a private folder instead (uncached) rather than into the entry it can no longer write.
            ctx.cand.extensions_dir(str(f.cand / "torch_extensions"))
    ctx.record["phases"]["compile_import"] = round(loaded["compile_s"], 3)
    ctx.state_entries = loaded["state"]


def recompile(ctx: Context) -> None:
    """Import the kernel again, in a fresh candidate worker (the timing phase's next process pair): its build is
    found where the first import left it (the compile cache, or its own build folder)."""
    _compile(ctx)


def _cache_sandboxed_build(ctx: Context, cache_state: str, compile_s: float) -> None:
    """After a sandboxed import: a fresh build goes into the cache (copied out of the kernel's folder, without
    links or anything but regular files and folders, before the kernel runs again); a kernel that built nothing
    at import leaves no entry."""
    cache = ctx.cache
    assert cache is not None
    built = ctx.folders.cand / "build"
    if cache_state == "miss":
        names = [p.name for p in built.iterdir() if p.name not in ("lock", "triton")] if built.is_dir() else []
        if names:
            shutil.rmtree(cache.build_dir, ignore_errors=True)
            shutil.copytree(
                built,
                cache.build_dir,
                symlinks=True,
                ignore=lambda d, files: [f for f in files if f in ("lock", "triton") or os.path.islink(f"{d}/{f}")],
            )
            take_back(cache.build_dir, ctx.workers.ident)
            cache.commit(compile_s)
        else:
            cache.discard()
    cache.release()


def handover(ctx: Context) -> None:
    """Give the candidate the problem's get_inputs (inputs are regenerated from seeds on both sides, never
    shipped) and pick how outputs travel back: CUDA IPC when the reference can open the candidate's handles."""
    ctx.cand.set_problem(Path(ctx.spec.problem_path).read_text())
    chosen, reasons = "file", ["cpu device"] if not ctx.cuda else []
    fd_socks = ctx.workers.fd_socks
    if fd_socks is not None:  # zero-copy across the sandbox: a shared buffer passed as a file descriptor
        cand_fd, ref_fd = (sock.fileno() for sock in fd_socks)
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
    ctx.record["environment"]["output_handover"] = (
        chosen if ctx.ipc else f"file ({'; '.join(str(r) for r in reasons) or 'probe failed'})"
    )
