import torch
import torch.nn as nn


class Model(nn.Module):
    """A short matrix product C = A @ B (red-team problem, CPU-sized: about 0.15 ms a call, below the ~0.2 ms where
    the wall-clock cross-check's 2 ms-per-block allowance used to exceed a whole call)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 192
K = 384


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, M)]


def get_init_inputs():
    return []
