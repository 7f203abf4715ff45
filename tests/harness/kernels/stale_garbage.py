# Returns uninitialised memory for half of the output (B1/B2): caught by poisoning and the determinism re-run.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        out[:32] = torch.relu(x[:32])
        return out
