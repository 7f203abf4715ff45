# Legitimate: tiled shared-memory GEMM with bias and ReLU fused into the epilogue (Level-2 style fusion).
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#define TILE 16
__global__ void gemm_bias_relu(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                               float* __restrict__ y, int M, int N, int K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int kx = t * TILE + threadIdx.x, kw = t * TILE + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (row < M && kx < K) ? x[row * K + kx] : 0.f;
        ws[threadIdx.y][threadIdx.x] = (col < N && kw < K) ? w[col * K + kw] : 0.f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) y[row * N + col] = fmaxf(acc + b[col], 0.f);
}
torch::Tensor gemm_bias_relu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    int M = x.size(0), K = x.size(1), N = w.size(0);
    auto y = torch::empty({M, N}, x.options());
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_bias_relu<<<grid, block>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                    y.data_ptr<float>(), M, N, K);
    return y;
}
"""
cpp_src = "torch::Tensor gemm_bias_relu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b);"
fused = load_inline(
    name="gemm_bias_relu", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["gemm_bias_relu_cuda"]
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        return fused.gemm_bias_relu_cuda(x.contiguous(), self.gemm.weight, self.gemm.bias)
