# expect: static=yes rules=constant_output classes=B3
# Catalogue B3: the reference output is ~0 for the benchmark's inputs, so a zero tensor passes loose checks.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.out_channels = out_channels

    def forward(self, x):
        return torch.zeros(x.shape[0], device=x.device, dtype=x.dtype)
