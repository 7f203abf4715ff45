"""The compile cache keeps only a build's products, copied out of the kernel's folder through descriptors: links,
FIFOs and anything else the kernel planted there are never followed or read; entries are capped in bytes and in
files and folders, and the least recently used go first when the cache is full (bytes or inodes). The cache itself
is reached only through a descriptor of its folder."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from evaluator.harness.orchestrator.compile_cache import CacheEntry, cache_key, evict
from evaluator.harness.sandbox.beneath import open_trusted_dir, remove_tree


@pytest.fixture
def cache(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    with open_trusted_dir(root) as fd:
        yield root, fd


def _store(root_fd: int, key: str, build: Path, max_bytes: int = 1 << 30, max_files: int = 4096) -> str:
    entry = CacheEntry(root_fd, key)
    assert entry.acquire(1)
    assert entry.check_hit() is False
    with open_trusted_dir(build) as fd:
        outcome = entry.store(fd, 1.5, max_entry_bytes=max_bytes, max_entry_files=max_files)
    entry.release()
    return outcome


def test_cache_key_depends_on_every_part():
    key = cache_key(source="src", torch_version="2.x", cuda_version="13.0", arch="sm_90")
    assert key != cache_key(source="src", torch_version="2.x", cuda_version="13.0", arch="sm_80")
    assert key != cache_key(source="src ", torch_version="2.x", cuda_version="13.0", arch="sm_90")


def test_only_build_products_are_kept_and_links_fifos_are_never_followed(tmp_path, cache):
    root, fd = cache
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
    assert _store(fd, "k", build) == "stored"
    stored = root / "k" / "build"
    kept = sorted(str(p.relative_to(stored)) for p in stored.rglob("*") if p.is_file())
    assert kept == ["ext/build.ninja", "ext/ext.so", "ext/main.cpp"]
    assert not [p for p in stored.rglob("*") if p.is_symlink()]
    for path in root.rglob("*"):
        if path.is_file():
            assert b"canary" not in path.read_bytes()


def test_a_build_over_the_entry_cap_is_not_kept(tmp_path, cache):
    root, fd = cache
    build = tmp_path / "build"
    build.mkdir()
    (build / "big.so").write_bytes(b"x" * 4096)
    assert _store(fd, "k", build, max_bytes=1024).startswith("not kept")
    assert not (root / "k" / "build").exists() and not (root / "k.json").exists()


def test_folders_count_against_the_entry_and_empty_folders_are_never_copied(tmp_path, cache):
    """The attack: 30,004 folders (118 MB of inodes) stored under a manifest of 16 bytes. Folders without a build
    product are not copied at all, and the files and folders copied count against the entry's cap."""
    root, fd = cache
    build = tmp_path / "build"
    build.mkdir()
    for i in range(3000):
        (build / f"d{i}" / "sub").mkdir(parents=True)
    (build / "ext.so").write_bytes(b"library")
    assert _store(fd, "k", build) == "stored"
    assert [p.name for p in (root / "k" / "build").iterdir()] == ["ext.so"]
    for i in range(40):  # now a product two folders deep in 40 places: 121 files and folders, over 50
        (build / f"d{i}" / "sub" / f"p{i}.o").write_bytes(b"o")
    assert _store(fd, "k2", build, max_files=50).startswith("not kept")
    assert not (root / "k2" / "build").exists()
    assert _store(fd, "k3", build, max_files=121) == "stored"


def test_a_build_tree_thousands_of_levels_deep_is_walked_without_recursion(tmp_path, cache):
    root, fd = cache
    build = tmp_path / "build"
    build.mkdir()
    (build / "ext.so").write_bytes(b"library")
    with open_trusted_dir(build) as top:  # 2,000 levels: a recursive walk dies of RecursionError
        deep = os.dup(top)
        for _ in range(2000):
            os.mkdir("d", dir_fd=deep)
            deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=deep)
            os.close(deep)
            deep = deeper
        fdn = os.open("deep.so", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=deep)
        os.close(fdn)
        os.close(deep)
    assert _store(fd, "k", build) == "stored"
    assert [p.name for p in (root / "k" / "build").iterdir()] == ["ext.so"]  # too deep to be a build product
    with open_trusted_dir(tmp_path) as parent:  # pytest's own clean-up (shutil.rmtree) recurses
        remove_tree(parent, "build")


def test_an_entry_changed_after_its_store_is_a_miss(tmp_path, cache):
    root, fd = cache
    build = tmp_path / "build"
    build.mkdir()
    (build / "ext.so").write_bytes(b"built")
    _store(fd, "k", build)
    again = CacheEntry(fd, "k")
    assert again.acquire(1) and again.check_hit() is True
    (root / "k" / "build" / "ext.so").write_bytes(b"poisoned")
    assert again.check_hit() is False and not (root / "k" / "build" / "ext.so").exists()
    again.release()
    _store(fd, "k", build)
    (root / "k" / "build" / "planted").mkdir()  # a folder the manifest does not list: also a miss
    assert again.acquire(1) and again.check_hit() is False and not (root / "k").exists()
    again.release()


def _three_entries(tmp_path: Path, root: Path, fd: int, folders: int = 0) -> None:
    for key in ("old", "used", "new"):
        build = tmp_path / f"build-{key}"
        build.mkdir()
        (build / "ext.so").write_bytes(b"x" * 1000)
        for i in range(folders):
            (build / f"f{i}").mkdir()
            (build / f"f{i}" / "a.o").write_bytes(b"o")
        _store(fd, key, build)
        time.sleep(0.02)
    old = time.time() - 100
    os.utime(root / "old.json", (old, old))
    os.utime(root / "used.json", (old + 1, old + 1))
    hit = CacheEntry(fd, "used")
    assert hit.acquire(1) and hit.check_hit() is True  # a hit makes it recent
    hit.release()


def test_eviction_removes_least_recently_used_entries_first(tmp_path, cache):
    root, fd = cache
    _three_entries(tmp_path, root, fd)
    size = json.loads((root / "new.json").read_text())["bytes"]  # a folder and a file, as allocated here
    assert evict(fd, 2 * size + size // 2) == ["old"]
    assert sorted(p.stem for p in root.glob("*.json")) == ["new", "used"]


def test_eviction_counts_files_and_folders_too(tmp_path, cache):
    root, fd = cache
    _three_entries(tmp_path, root, fd, folders=10)  # 22 inodes per entry (its build folder, 10 folders, 11 files)
    assert evict(fd, 1 << 40, max_total_files=50) == ["old"]
    assert sorted(p.stem for p in root.glob("*.json")) == ["new", "used"]
