# Correct (and slow) L1/1 matmul: a 32x32 shared-memory tiled FP32 SGEMM built with load_inline.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#define TILE 32

__global__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                            int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int t = 0; t < N; t += TILE) {
        As[ty][tx] = (row < N && t + tx < N) ? A[(int64_t)row * N + t + tx] : 0.f;
        Bs[ty][tx] = (t + ty < N && col < N) ? B[(int64_t)(t + ty) * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < N && col < N) C[(int64_t)row * N + col] = acc;
}

torch::Tensor matmul_tiled(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda() && A.scalar_type() == torch::kFloat && B.scalar_type() == torch::kFloat);
    TORCH_CHECK(A.dim() == 2 && A.size(0) == A.size(1) && B.sizes() == A.sizes(), "square matrices expected");
    auto a = A.contiguous(), b = B.contiguous();
    int N = a.size(0);
    auto C = torch::empty({N, N}, a.options());
    dim3 threads(TILE, TILE), blocks((N + TILE - 1) / TILE, (N + TILE - 1) / TILE);
    sgemm_tiled<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                                         C.data_ptr<float>(), N);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return C;
}
"""

matmul_ext = load_inline(
    name="matmul_tiled",
    cpp_sources="torch::Tensor matmul_tiled(torch::Tensor A, torch::Tensor B);",
    cuda_sources=cuda_source,
    functions=["matmul_tiled"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_ext.matmul_tiled(A, B)
