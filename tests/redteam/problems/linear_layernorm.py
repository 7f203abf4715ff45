import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer followed by LayerNorm; default init leaves the LayerNorm affine at 1 and 0."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x))


batch_size = 256
in_features = 512
out_features = 512


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
