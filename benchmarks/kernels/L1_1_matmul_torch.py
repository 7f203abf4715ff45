# L1/1 "kernel" that is just torch.matmul (catalogue D1, PyTorch wrapping). Under the TF32 flags it is exactly the
# verified baseline (speedup ~1x), yet about 7x "faster" than the FP32 baseline the standard protocol uses.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)
