"""The compile cache keeps only a build's products, copied out of the kernel's folder through descriptors: links,
FIFOs and anything else the kernel planted there are never followed or read; entries are size-capped and the least
recently used go first when the cache is full."""

from __future__ import annotations

import os
import time
from pathlib import Path

from evaluator.harness.orchestrator.compile_cache import CacheEntry, cache_key, evict
from evaluator.harness.sandbox.beneath import open_trusted_dir


def _store(root: Path, key: str, build: Path, max_bytes: int = 1 << 30) -> tuple[CacheEntry, str]:
    entry = CacheEntry(root, key)
    assert entry.acquire(1)
    assert entry.check_hit() is False
    with open_trusted_dir(build) as fd:
        outcome = entry.store(fd, 1.5, max_entry_bytes=max_bytes)
    entry.release()
    return entry, outcome


def test_cache_key_depends_on_every_part():
    key = cache_key(source="src", torch_version="2.x", cuda_version="13.0", arch="sm_90")
    assert key != cache_key(source="src", torch_version="2.x", cuda_version="13.0", arch="sm_80")
    assert key != cache_key(source="src ", torch_version="2.x", cuda_version="13.0", arch="sm_90")


def test_only_build_products_are_kept_and_links_fifos_are_never_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root-only canary")
    secret.chmod(0o600)
    build = tmp_path / "build"
    (build / "ext").mkdir(parents=True)
    (build / "ext" / "ext.so").write_bytes(b"\x7fELF library")
    (build / "ext" / "main.cpp").write_text("int main() {}")
    (build / "ext" / "build.ninja").write_text("rule cc")
    (build / "ext" / "data.bin").write_bytes(b"x" * 1000)  # not a build product
    (build / "ext" / "stolen.so").symlink_to(secret)  # a link with a product's name
    (build / "linked-dir").symlink_to(tmp_path)  # a whole folder swapped for a link
    os.mkfifo(build / "ext" / "pipe.o")  # reading it would block the orchestrator
    entry, outcome = _store(tmp_path / "cache", "k", build)
    assert outcome == "stored"
    kept = sorted(str(p.relative_to(entry.build_dir)) for p in entry.build_dir.rglob("*") if p.is_file())
    assert kept == ["ext/build.ninja", "ext/ext.so", "ext/main.cpp"]
    assert not [p for p in entry.build_dir.rglob("*") if p.is_symlink()]
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert b"canary" not in path.read_bytes()


def test_a_build_over_the_entry_cap_is_not_kept(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    (build / "big.so").write_bytes(b"x" * 4096)
    entry, outcome = _store(tmp_path / "cache", "k", build, max_bytes=1024)
    assert outcome.startswith("not kept")
    assert not entry.build_dir.exists() and not entry.manifest_path.exists()


def test_an_entry_changed_after_its_store_is_a_miss(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    (build / "ext.so").write_bytes(b"built")
    entry, _ = _store(tmp_path / "cache", "k", build)
    again = CacheEntry(tmp_path / "cache", "k")
    assert again.acquire(1) and again.check_hit() is True
    (again.build_dir / "ext.so").write_bytes(b"poisoned")
    assert again.check_hit() is False and not (again.build_dir / "ext.so").exists()
    again.release()


def test_eviction_removes_least_recently_used_entries_first(tmp_path):
    root = tmp_path / "cache"
    for key in ("old", "used", "new"):
        build = tmp_path / f"build-{key}"
        build.mkdir()
        (build / "ext.so").write_bytes(b"x" * 1000)
        _store(root, key, build)
        time.sleep(0.02)
    old = time.time() - 100
    os.utime(root / "old.json", (old, old))
    os.utime(root / "used.json", (old + 1, old + 1))
    hit = CacheEntry(root, "used")
    assert hit.acquire(1) and hit.check_hit() is True  # a hit makes it recent
    hit.release()
    removed = evict(root, 2500)
    assert removed == ["old"]
    assert sorted(p.stem for p in root.glob("*.json")) == ["new", "used"]
