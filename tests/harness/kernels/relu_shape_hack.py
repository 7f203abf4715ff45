# The paper's ReLU hack: on the benchmark's shape (and all-positive torch.rand inputs) ReLU is the identity, so the
# "kernel" copies its input. Passes D1 (and the standard protocol); D4 (negated inputs) exposes it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape == (64, 512):
            return x.clone()
        return torch.relu(x)
