import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, BatchNorm1d (training-mode statistics), GELU: a small Level-2 style fusion pattern."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.bn(self.linear(x)))


batch_size = 64
in_features = 64
out_features = 64


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
