import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B, fp32, K = 4096 (randn inputs): where TF32 arithmetic shows against the 1e-3 gate."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 1024
K = 4096
N = 1024


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
