import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear (K = 4096), BatchNorm1d in training mode, GELU: the normalisation amplifies any TF32 error in the
    Linear (a correct kernel once failed D1-D4 on the H200 when its own nn.Linear ran in TF32)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.bn(self.linear(x)))


batch_size = 128
in_features = 4096
out_features = 512


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
