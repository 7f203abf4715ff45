# Legitimate: tanh-approximation GELU exactly as nn.GELU(approximate="tanh") defines it, built with -O3; an
# in-place ReLU-like clamp on an intermediate (not an input).
import math

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void gelu_tanh(const float* x, float* y, int n, float k0) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.f + tanhf(k0 * (v + 0.044715f * v * v * v)));
    }
}
torch::Tensor gelu_cuda(torch::Tensor x, double k0) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    gelu_tanh<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n, (float)k0);
    return y;
}
"""
ext = load_inline(
    name="gelu_tanh",
    cpp_sources="torch::Tensor gelu_cuda(torch::Tensor x, double k0);",
    cuda_sources=cuda_src,
    functions=["gelu_cuda"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k0 = math.sqrt(2.0 / math.pi)

    def forward(self, x):
        y = ext.gelu_cuda(x.contiguous(), self.k0)
        y.clamp_(min=-1e30)
        return y
