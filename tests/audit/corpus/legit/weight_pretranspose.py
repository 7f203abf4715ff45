# Legitimate (D4): the weight is transposed once in __init__ (valid for any weights) and kept as a buffer;
# forward allocates a fresh output every call and launches a Triton matmul.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(
            a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0
        )
        b = tl.load(
            b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(a, b, allow_tf32=False)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        linear = nn.Linear(in_features, out_features, bias=False)
        self.weight = linear.weight
        self.register_buffer("weight_t", linear.weight.detach().t().contiguous(), persistent=False)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.weight_t.shape[1]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_kernel[grid](x, self.weight_t, out, M, N, K, BM=64, BN=64, BK=32)
        return out
