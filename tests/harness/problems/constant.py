import torch
import torch.nn as nn


class Model(nn.Module):
    """Degenerate like KernelBench L2/83: min(x, 0) then clamp(0, 1) is zero for every input."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(torch.clamp(x, max=0.0), min=0.0, max=1.0)


def get_inputs():
    return [torch.rand(16, 64)]


def get_init_inputs():
    return []
