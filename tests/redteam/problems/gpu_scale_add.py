import torch
import torch.nn as nn


class Model(nn.Module):
    """out = 2 * x + y: two eager kernels (a multiply, then an add) that a fused CUDA kernel does in one pass.
    GPU red-team problem (32 Mi elements, 128 MiB per tensor, memory-bound: kernel time well above launch overhead)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * 2.0 + y


N = 1 << 25


def get_inputs():
    return [torch.rand(N), torch.rand(N)]


def get_init_inputs():
    return []
