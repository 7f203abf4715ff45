# Legitimate: sum reduction over the last dim with warp shuffles, __constant__ parameters, static_cast and a
# static inline helper (none of which is persistent state).
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>
__constant__ float kScale[1];
static const int kWarp = 32;
static __device__ __forceinline__ float warp_sum(float v) {
    for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}
__global__ void row_sum(const float* __restrict__ x, float* __restrict__ y, int cols) {
    int row = blockIdx.x;
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += x[static_cast<size_t>(row) * cols + j];
    s = warp_sum(s);
    __shared__ float part[32];
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.f;
        t = warp_sum(t);
        if (threadIdx.x == 0) y[row] = t * kScale[0];
    }
}
torch::Tensor row_sum_cuda(torch::Tensor x) {
    int cols = x.size(-1);
    int rows = x.numel() / cols;
    float one = 1.f;
    cudaMemcpyToSymbol(kScale, &one, sizeof(float));
    auto y = torch::empty({rows}, x.options());
    row_sum<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y.view({rows, 1});
}
"""
ext = load_inline(
    name="row_sum_warp",
    cpp_sources="torch::Tensor row_sum_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["row_sum_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.row_sum_cuda(x.contiguous())
