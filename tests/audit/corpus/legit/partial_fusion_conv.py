# Legitimate but partly PyTorch (D1 label, info): cuDNN does the convolution, a custom kernel fuses the
# bias + hardswish epilogue that follows it.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void bias_hardswish(float* y, const float* bias, int C, int HW, int total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    float v = y[i] + bias[(i / HW) % C];
    y[i] = v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;
}
torch::Tensor bias_hardswish_cuda(torch::Tensor y, torch::Tensor bias) {
    int C = y.size(1), HW = y.size(2) * y.size(3), total = y.numel();
    bias_hardswish<<<(total + 255) / 256, 256>>>(y.data_ptr<float>(), bias.data_ptr<float>(), C, HW, total);
    return y;
}
"""
ext = load_inline(
    name="bias_hswish",
    cpp_sources="torch::Tensor bias_hardswish_cuda(torch::Tensor y, torch::Tensor bias);",
    cuda_sources=cuda_src,
    functions=["bias_hardswish_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = self.conv(x).contiguous()
        y = ext.bias_hardswish_cuda(y, self.bias)
        return y
