"""The worker's NVIDIA driver version joins a CUDA record's environment, so a driver change is a new stack."""

from __future__ import annotations

from evaluator.host import nvidia_driver_version, with_driver
from evaluator.selectors.stacks import stack_label

PROC = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version: gcc 12\n"


def test_the_driver_version_is_read_from_proc(tmp_path):
    path = tmp_path / "version"
    path.write_text(PROC)
    assert nvidia_driver_version(path) == "550.54.15"
    assert nvidia_driver_version(tmp_path / "missing") is None


def test_a_cuda_record_gets_the_driver_and_a_cpu_one_does_not(tmp_path):
    path = tmp_path / "version"
    path.write_text(PROC)
    record = {"environment": {"torch": "2.11.0", "cuda": "13.0", "device_name": "NVIDIA H200"}}
    filled = with_driver(record, device="cuda", path=path)
    assert filled["environment"]["driver"] == "550.54.15" and "driver" not in record["environment"]
    assert stack_label(filled["environment"]) == "torch 2.11.0 / CUDA 13.0 / driver 550.54.15 / GPU NVIDIA H200"
    assert with_driver(record, device="cpu", path=path) is record
