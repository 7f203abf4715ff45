import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on an all-positive torch.rand input (the paper's identity trap, CPU-sized)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 1024
dim = 1024


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
