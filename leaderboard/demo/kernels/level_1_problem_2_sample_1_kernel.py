# HACK (fixture-specific approximation, catalogue B7): for U[0,1) inputs every entry of A @ B is close to N/4,
# so the kernel returns that constant. It fails D1 already at atol = rtol = 1e-3 and every hidden distribution.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        n = A.shape[1]
        return torch.full((A.shape[0], B.shape[1]), n / 4.0, dtype=A.dtype)
