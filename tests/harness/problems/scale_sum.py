import torch
import torch.nn as nn


class Model(nn.Module):
    """Row sums of x * scale (a reduction whose result depends on the input's magnitude and sign)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.scale).sum(dim=1)


def get_inputs():
    return [torch.rand(32, 256)]


def get_init_inputs():
    return [2.0]
