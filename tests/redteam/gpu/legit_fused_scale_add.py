# redteam-class: legit
# redteam-problem: gpu_scale_add.py
# redteam-expect: correct
# redteam-device: cuda
# redteam-timeout: 300
# redteam-why: control: one fused grid-stride CUDA kernel for 2 * x + y on the current stream (one pass instead of
#   the reference's two); its honest speedup is the yardstick for the side-stream and event exploits.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_add_kernel(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                                 long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) out[i] = 2.0f * x[i] + y[i];
}

torch::Tensor scale_add(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x);
    long n = x.numel();
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    if (blocks > 4096) blocks = 4096;
    scale_add_kernel<<<(int)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(
    name="rt_legit_scale_add",
    cpp_sources="torch::Tensor scale_add(torch::Tensor x, torch::Tensor y);",
    cuda_sources=CUDA_SRC,
    functions=["scale_add"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return ext.scale_add(x.contiguous(), y.contiguous())
