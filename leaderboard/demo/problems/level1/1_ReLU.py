import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies ReLU. A CPU-sized copy of KernelBench L1/19 (the paper's shape-guard example)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 64
dim = 4096


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
