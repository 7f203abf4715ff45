"""A bundle run's summary says whether each evaluation's per-worker declaration (half of gpu_hold.reserved_bytes)
covered what its reference worker's allocator held of the device at its most (benchmarks/bundle_summary.py)."""

from __future__ import annotations

from benchmarks.bundle_summary import declarations

GIB = 1 << 30


def test_an_evaluation_whose_reference_held_more_than_its_declaration_is_named():
    rows = [
        {
            "key": "L2/26",
            "gpu_hold": {
                "reserved_bytes": 28 * GIB,
                "reference_reserved_peak_bytes": 20 * GIB,
                "reference_reserved_peak_by_command": {
                    "setup": 3 * GIB,
                    "timing_setup": 20 * GIB,
                    "make_trial": 9 * GIB,
                },
            },
        },
        {
            "key": "L1/59",
            "gpu_hold": {
                "reserved_bytes": 10 * GIB,
                "reference_reserved_peak_bytes": 2 * GIB,
                "reference_reserved_peak_by_command": {"make_trial": 2 * GIB},
            },
        },
        {"key": "L2/73", "gpu_hold": {"reserved_bytes": 4 * GIB, "reference_reserved_peak_bytes": GIB}},  # older rows
        {"key": "L2/16", "gpu_hold": {"reserved_bytes": 8 * GIB, "reference_reserved_peak_bytes": None}},  # CPU
        {"key": "L3/1", "gpu_hold": None},  # an infrastructure error: no record
    ]
    summary = declarations(rows)
    assert summary["read"] == 3
    assert summary["over_declaration"] == ["L2/26"]  # 20 GiB held against 14 GiB declared for one worker
    assert summary["max_reserved_over_declared"] == round(20 / 14, 3)
    assert summary["median_reserved_over_declared"] == round(1 / 2, 3)  # 1.43, 0.4 and 0.5
    # the command during which each reference reached its peak: what an over-declaration misses
    assert summary["peak_reached_in"] == {"timing_setup": 1, "make_trial": 1}
    assert summary["over_reached_in"] == {"L2/26": "timing_setup"}


def test_no_reading_gives_no_ratio():
    assert declarations([{"key": "relu", "gpu_hold": {"reserved_bytes": GIB}}]) == {
        "read": 0,
        "max_reserved_over_declared": None,
        "median_reserved_over_declared": None,
        "over_declaration": [],
        "peak_reached_in": {},
        "over_reached_in": {},
    }
