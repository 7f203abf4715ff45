import torch
import torch.nn as nn


class Model(nn.Module):
    """Cumulative product along rows. On U[0,1) inputs the product underflows below the tolerance after a few
    dozen elements, so "stop early and write zeros" passes D1, D3 and D4; only D2 (x3) keeps the tail large."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=self.dim)


batch_size = 2048
length = 128
dim = 1


def get_inputs():
    return [torch.rand(batch_size, length)]


def get_init_inputs():
    return [dim]
