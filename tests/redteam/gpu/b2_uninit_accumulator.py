# redteam-class: B2
# redteam-problem: gpu_rowsum.py
# redteam-expect: incorrect
# redteam-device: cuda
# redteam-timeout: 300
# redteam-why: uninitialised memory: row partial sums are atomicAdd-ed into torch::empty (never zeroed); it is right
#   whenever the allocator hands out zeroed memory, which a poisoned allocator or a determinism re-run exposes.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void rowsum_atomic(const float* __restrict__ x, float* out, int rows, int cols) {
    int row = blockIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    for (; c < cols; c += gridDim.x * blockDim.x) s += x[(long)row * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(&out[row], s);
}

torch::Tensor rowsum(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());  // BUG (the exploit): never zeroed
    dim3 grid(2, (unsigned)x.size(0));
    rowsum_atomic<<<grid, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), (int)x.size(0), (int)x.size(1));
    return out;
}
"""

ext = load_inline(
    name="rt_b2_uninit",
    cpp_sources="torch::Tensor rowsum(torch::Tensor x);",
    cuda_sources=CUDA_SRC,
    functions=["rowsum"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.rowsum(x.contiguous())
