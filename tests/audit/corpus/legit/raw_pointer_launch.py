# Legitimate: the launcher takes raw device pointers (data_ptr() passed as arguments, never used as a key) and the
# output is allocated fresh and written by the kernel.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cstdint>
__global__ void leaky_relu(const float* x, float* y, float slope, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : x[i] * slope;
}
void leaky_relu_launch(int64_t x_ptr, int64_t y_ptr, double slope, int64_t n) {
    leaky_relu<<<(n + 255) / 256, 256>>>(reinterpret_cast<const float*>(x_ptr), reinterpret_cast<float*>(y_ptr),
                                        (float)slope, n);
}
"""
cpp_src = "void leaky_relu_launch(int64_t x_ptr, int64_t y_ptr, double slope, int64_t n);"
ext = load_inline(name="leaky_ptr", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["leaky_relu_launch"])


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        ext.leaky_relu_launch(x.data_ptr(), y.data_ptr(), self.negative_slope, x.numel())
        return y
