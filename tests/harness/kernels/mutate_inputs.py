# Writes into its input (B5), then returns a fresh, correct-looking tensor.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(x)
        x.zero_()
        return out
