"""parse_bundle: every accepted format, and every kind of bad input (rejected whole or skipped per file)."""

from __future__ import annotations

import json
import tarfile

import pytest

from leaderboard.bundles import BundleError, Limits, parse_bundle
from tests.pipeline.helpers import demo_kernel, jsonl, kernel_name, leaderboard_json, make_tar, make_zip

SRC = demo_kernel(1, 1)
SMALL = Limits(max_bytes=64 * 1024, max_files=5, kernel_max_bytes=8 * 1024, max_uncompressed_bytes=256 * 1024)


def keys(bundle) -> list[tuple[int, int, int]]:
    return [e.key for e in bundle.entries]


def reasons(bundle) -> dict[str, str]:
    return {r.name: r.reason for r in bundle.report if r.status == "skipped"}


# --- formats ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["list", "dict"])
def test_zip_run_folder_with_eval_results_in_either_shape(shape: str) -> None:
    claim = {"sample_id": 0, "compiled": True, "correctness": True, "runtime": 1.0}
    results = {"1": [claim] if shape == "list" else claim, "2": [claim, claim] if shape == "list" else claim}
    data = make_zip(
        {
            f"runs/r1/{kernel_name(1, 1)}": SRC,
            f"runs/r1/{kernel_name(1, 2, 3)}": SRC,
            "runs/r1/generation_config.yaml": "x: 1",
            "runs/r1/eval_results.json": json.dumps(results),
        }
    )
    bundle = parse_bundle(filename="run.zip", data=data)
    assert bundle.format == "zip"
    assert keys(bundle) == [(1, 1, 0), (1, 2, 3)]
    assert bundle.entries[0].source == SRC
    claims = bundle.claimed_results["runs/r1/eval_results.json"]
    assert claims["1"] == [claim]
    assert len(claims["2"]) == (2 if shape == "list" else 1)
    assert "not a kernel file" in reasons(bundle)["runs/r1/generation_config.yaml"]
    assert "claimed results" in reasons(bundle)["runs/r1/eval_results.json"]


def test_tar_gz_and_plain_tar_run_folders() -> None:
    files = {f"r/{kernel_name(2, 1)}": SRC, f"r/{kernel_name(1, 3, 1)}": SRC}
    assert keys(parse_bundle(filename="run.tar.gz", data=make_tar(files))) == [(2, 1, 0), (1, 3, 1)]
    assert keys(parse_bundle(filename="run.tar", data=make_tar(files, gz=False))) == [(2, 1, 0), (1, 3, 1)]
    # Magic bytes decide when the name says nothing.
    assert parse_bundle(filename="upload", data=make_tar(files)).format == "tar.gz"
    assert parse_bundle(filename="upload", data=make_zip(files)).format == "zip"


def test_leaderboard_json() -> None:
    data = leaderboard_json(
        {"level_1_problem_1_sample_0": SRC, "level_2_problem_1_sample_0": SRC, "not_a_key": SRC},
        metadata={"display_name": "Model X", "organization": "Lab", "nested": {"dropped": True}},
    )
    bundle = parse_bundle(filename="submission.json", data=data)
    assert keys(bundle) == [(1, 1, 0), (2, 1, 0)]
    assert bundle.metadata == {"display_name": "Model X", "organization": "Lab"}
    assert "key is not" in reasons(bundle)["not_a_key"]


def test_jsonl_kernelbench_and_cuda_l1_fields() -> None:
    data = (
        jsonl(
            [
                {"level": 1, "problem_id": 1, "sample": 0, "source": SRC},
                {"level_id": 1, "task_id": 2, "custom_code": SRC},
                {"level": "1", "problem_id": "3", "sample": 2, "source": SRC},
                {"level": 1, "problem_id": True, "source": SRC},
                {"level": 1, "problem_id": 4, "source": 12},
            ]
        )
        + b"\n\nnot json\n[1]\n"
    )
    bundle = parse_bundle(filename="k.jsonl", data=data)
    assert keys(bundle) == [(1, 1, 0), (1, 2, 0), (1, 3, 2)]
    why = reasons(bundle)
    assert "problem_id missing" in why["line 4"]
    assert "not a string" in why["line 5"]
    assert "not valid JSON" in why["line 7"]
    assert "not a JSON object" in why["line 8"]


def test_single_py_needs_level_and_problem_or_a_kernelbench_name() -> None:
    assert keys(parse_bundle(filename="k.py", data=SRC.encode(), level=1, problem_id=2, sample=4)) == [(1, 2, 4)]
    assert keys(parse_bundle(filename=kernel_name(2, 1, 1), data=SRC.encode())) == [(2, 1, 1)]
    with pytest.raises(BundleError, match="level and problem_id"):
        parse_bundle(filename="k.py", data=SRC.encode())


# --- bad input: rejected whole ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../evil/" + kernel_name(1, 1), "/abs/" + kernel_name(1, 1), "a/../../" + kernel_name(1, 1), "C:/x.py"]
)
def test_zip_path_traversal_and_absolute_paths_are_rejected(name: str) -> None:
    with pytest.raises(BundleError, match="absolute path|leaves its folder"):
        parse_bundle(filename="run.zip", data=make_zip({name: SRC}))


def test_tar_path_traversal_is_rejected() -> None:
    with pytest.raises(BundleError, match="leaves its folder"):
        parse_bundle(filename="run.tar.gz", data=make_tar({"../" + kernel_name(1, 1): SRC}))


def test_zip_symlink_is_rejected() -> None:
    data = make_zip({kernel_name(1, 1): SRC}, symlinks=(kernel_name(1, 2),))
    with pytest.raises(BundleError, match="symbolic link"):
        parse_bundle(filename="run.zip", data=data)


@pytest.mark.parametrize(
    ("kind", "message"),
    [(tarfile.SYMTYPE, "link"), (tarfile.LNKTYPE, "link"), (tarfile.CHRTYPE, "device"), (tarfile.FIFOTYPE, "device")],
)
def test_tar_links_and_devices_are_rejected(kind: bytes, message: str) -> None:
    data = make_tar({kernel_name(1, 1): SRC}, special=((kernel_name(1, 2), kind),))
    with pytest.raises(BundleError, match=message):
        parse_bundle(filename="run.tar.gz", data=data)


def test_oversize_bundle_is_rejected() -> None:
    with pytest.raises(BundleError, match="BUNDLE_MAX_BYTES"):
        parse_bundle(filename="k.py", data=b"#" * (SMALL.max_bytes + 1), level=1, problem_id=1, limits=SMALL)


@pytest.mark.parametrize("fmt", ["zip", "tar.gz", "json", "jsonl"])
def test_too_many_files_is_rejected(fmt: str) -> None:
    n = SMALL.max_files + 1
    kernels = {kernel_name(1, i + 1): SRC for i in range(n)}
    data = {
        "zip": lambda: make_zip(kernels),
        "tar.gz": lambda: make_tar(kernels),
        "json": lambda: leaderboard_json({k.removesuffix("_kernel.py"): SRC for k in kernels}),
        "jsonl": lambda: jsonl([{"level": 1, "problem_id": i + 1, "source": SRC} for i in range(n)]),
    }[fmt]()
    with pytest.raises(BundleError, match="BUNDLE_MAX_FILES"):
        parse_bundle(filename=f"b.{fmt}", data=data, limits=SMALL)


def test_zip_bomb_is_rejected_while_reading() -> None:
    # Each member is within the per-file cap, but together they expand past the uncompressed budget.
    limits = Limits(max_bytes=64 * 1024, max_files=50, kernel_max_bytes=100_000, max_uncompressed_bytes=300_000)
    data = make_zip({kernel_name(1, i + 1): "#" * 99_000 for i in range(5)})
    assert len(data) < 5_000
    with pytest.raises(BundleError, match="zip bomb"):
        parse_bundle(filename="bomb.zip", data=data, limits=limits)


def test_tar_gz_bomb_is_rejected_while_decompressing() -> None:
    # One member, 2 MB of zeros, gzipped to a few KB: never a kernel file, but skipping it still decompresses.
    data = make_tar({"padding.bin": b"\0" * 2_000_000, kernel_name(1, 1): SRC})
    assert len(data) < 10_000
    with pytest.raises(BundleError, match="zip bomb"):
        parse_bundle(filename="bomb.tar.gz", data=data, limits=SMALL)


def test_corrupt_archives_and_unknown_formats_are_rejected() -> None:
    with pytest.raises(BundleError, match="zip"):
        parse_bundle(filename="run.zip", data=b"PK\x03\x04 not really a zip")
    with pytest.raises(BundleError, match="tar"):
        parse_bundle(filename="run.tar.gz", data=b"\x1f\x8b\x08 broken gzip")
    with pytest.raises(BundleError, match="Unknown bundle format"):
        parse_bundle(filename="notes.txt", data=b"hello")
    with pytest.raises(BundleError, match="does not parse"):
        parse_bundle(filename="b.json", data=b"{nope")
    with pytest.raises(BundleError, match="kernels"):
        parse_bundle(filename="b.json", data=b"[1, 2]")
    with pytest.raises(BundleError, match="empty"):
        parse_bundle(filename="b.json", data=b"")


def test_non_utf8_json_is_rejected_whole() -> None:
    with pytest.raises(BundleError, match="not UTF-8"):
        parse_bundle(filename="b.jsonl", data=b'{"level": 1, "problem_id": 1, "source": "\xff"}')


def test_bad_kernel_files_are_skipped_with_a_reason_and_the_rest_accepted() -> None:
    data = make_zip(
        {
            kernel_name(1, 1): SRC,
            kernel_name(1, 2): b"x = '\xff\xfe'",  # Latin-1, not UTF-8
            kernel_name(1, 3): "#" * (SMALL.kernel_max_bytes + 1),
            kernel_name(1, 4): "   \n",
            kernel_name(1, 5): "a = 1\x00",
        }
    )
    bundle = parse_bundle(filename="run.zip", data=data, limits=SMALL)
    assert keys(bundle) == [(1, 1, 0)]
    why = reasons(bundle)
    assert "not UTF-8" in why[kernel_name(1, 2)]
    assert "larger than" in why[kernel_name(1, 3)]
    assert "empty" in why[kernel_name(1, 4)]
    assert "NUL" in why[kernel_name(1, 5)]


def test_duplicates_are_skipped_and_point_at_the_first() -> None:
    data = make_zip({f"a/{kernel_name(1, 1)}": SRC, f"b/{kernel_name(1, 1)}": SRC + "\n# other"})
    bundle = parse_bundle(filename="run.zip", data=data)
    assert [e.origin for e in bundle.entries] == [f"a/{kernel_name(1, 1)}"]
    assert (
        reasons(bundle)[f"b/{kernel_name(1, 1)}"]
        == f"duplicate of a/{kernel_name(1, 1)} (same level, problem and sample)"
    )


def test_bundle_without_any_usable_kernel_is_rejected_with_its_report() -> None:
    with pytest.raises(BundleError) as info:
        parse_bundle(filename="run.zip", data=make_zip({"README.md": "hi", kernel_name(1, 1): b"\xff"}))
    assert info.value.message == "The bundle holds no usable kernel."
    assert {r["name"]: r["status"] for r in info.value.report} == {"README.md": "skipped", kernel_name(1, 1): "skipped"}


def test_report_rows_line_up_with_entries_after_a_drop() -> None:
    bundle = parse_bundle(
        filename="k.jsonl", data=jsonl([{"level": 1, "problem_id": i, "source": SRC} for i in (1, 2)])
    )
    bundle.drop(bundle.entries[0], "unknown problem")
    assert keys(bundle) == [(1, 2, 0)]
    assert [(r.status, r.reason) for r in bundle.report] == [("skipped", "unknown problem"), ("accepted", "")]
