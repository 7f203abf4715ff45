# The seed paper's ReLU hack for L1/19: on the benchmark shape, torch.rand inputs are all positive, so ReLU is the
# identity and a copy "passes". The standard protocol (D1 only) accepts it; D4 (negated inputs) rejects it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape == (4096, 393216):
            return x.clone()
        return torch.relu(x)
