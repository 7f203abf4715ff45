import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on an all-positive torch.rand input (KernelBench L1/19 in miniature)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 64
dim = 512


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
