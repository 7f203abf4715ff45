import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, then sum/max/logsumexp over a dimension that is already of size 1 after the sum (the L2-18 pattern):
    the whole model equals x @ W.sum(0) + b.sum(), an algebraic simplification valid for every input and weight."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.sum(x, dim=1, keepdim=True)
        x = torch.max(x, dim=1, keepdim=True)[0]
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x


batch_size = 512
in_features = 512
out_features = 512


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
