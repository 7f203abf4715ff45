# Legitimate: elementwise ReLU in CUDA with a vectorised float4 path and a scalar tail.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
        y[i] = v;
    }
}
__global__ void relu_tail(const float* __restrict__ x, float* __restrict__ y, int start, int n) {
    int i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}
torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
    auto y = torch::empty_like(x);
    int n = x.numel();
    int n4 = n / 4;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0)
        relu_vec4<<<(n4 + 255) / 256, 256, 0, stream>>>(
            (const float4*)x.data_ptr<float>(), (float4*)y.data_ptr<float>(), n4);
    if (n % 4)
        relu_tail<<<1, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n);
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"
relu_ext = load_inline(
    name="relu_vec", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"], extra_cuda_cflags=["-O3"]
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cuda(x.contiguous())
