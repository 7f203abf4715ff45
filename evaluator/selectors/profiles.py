"""Reads about profiles on request: whether a tool can profile an evaluation (the inspector's button says why not)."""

from __future__ import annotations

from evaluator.hardware import device_for
from evaluator.models import Evaluation, ProfileRequest


def profile_tool_unavailable(evaluation: Evaluation, tool: str = "torch") -> str:
    """Why the tool cannot profile this evaluation, or "" when it can (the inspector's button says so)."""
    if tool != ProfileRequest.Tool.TORCH:
        return "Nsight Compute is not wired yet (README: profiles on request)"
    if not device_for(evaluation.hardware).startswith("cuda"):
        return f"torch.profiler device traces need a CUDA worker; {evaluation.hardware} evaluations run on the CPU"
    return ""
