import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on an fp16 input: a problem whose reference output is half precision (the tolerance policy)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 64
dim = 512


def get_inputs():
    return [torch.rand(batch_size, dim).half()]


def get_init_inputs():
    return []
