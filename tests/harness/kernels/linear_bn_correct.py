import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        mean = y.mean(dim=0)
        var = y.var(dim=0, unbiased=False)
        y = (y - mean) * torch.rsqrt(var + self.bn.eps) * self.bn.weight + self.bn.bias
        with torch.no_grad():  # keep the running statistics in step with nn.BatchNorm1d
            m = self.bn.momentum
            n = y.shape[0]
            self.bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
            self.bn.running_var.mul_(1 - m).add_(var * n / (n - 1), alpha=m)
            self.bn.num_batches_tracked.add_(1)
        return torch.nn.functional.gelu(y)
