# Correct: the same computation with the batch statistics and the affine transform written out.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        mean = y.mean(dim=0)
        var = y.var(dim=0, unbiased=False)
        y = (y - mean) * torch.rsqrt(var + self.bn.eps) * self.bn.weight + self.bn.bias
        return torch.nn.functional.gelu(y)
