"""Hardware labels ("cpu", "h200", "h200-rerun"...): the torch device the harness uses for one."""

from __future__ import annotations


def device_for(hardware: str) -> str:
    """The torch device the harness uses for a hardware label: "cpu" labels run on CPU, all others on CUDA."""
    return "cpu" if hardware.split("-")[0] == "cpu" else "cuda"


def is_cpu(hardware: object) -> bool:
    """A CPU hardware label ("cpu", "cpu-test"...): timings noisy on a shared machine, not a GPU speedup."""
    return str(hardware or "").lower().startswith("cpu")
