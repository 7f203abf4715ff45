# L2/1 Conv2d + ReLU + bias add: cuDNN convolution (kept in FP32 so the 1e-3 gate holds), then one fused
# load_inline CUDA epilogue (ReLU and per-channel bias in a single pass, in place on the conv output).
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void relu_bias_vec4(float4* __restrict__ y, const float* __restrict__ bias, int64_t n4, int hw4, int C) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float b = bias[(i / hw4) % C];
        float4 v = y[i];
        v.x = fmaxf(v.x, 0.f) + b; v.y = fmaxf(v.y, 0.f) + b; v.z = fmaxf(v.z, 0.f) + b; v.w = fmaxf(v.w, 0.f) + b;
        y[i] = v;
    }
}

__global__ void relu_bias(float* __restrict__ y, const float* __restrict__ bias, int64_t n, int64_t hw, int C) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = fmaxf(y[i], 0.f) + bias[(i / hw) % C];
}

torch::Tensor relu_bias_(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.scalar_type() == torch::kFloat && y.dim() == 4);
    auto b = bias.contiguous();
    int C = y.size(1);
    int64_t hw = y.size(2) * y.size(3), n = y.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    int threads = 256;
    if (hw % 4 == 0) {
        int64_t n4 = n / 4;
        int64_t blocks = std::min<int64_t>((n4 + threads - 1) / threads, 132 * 64);
        relu_bias_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<float4*>(y.data_ptr<float>()),
                                                        b.data_ptr<float>(), n4, (int)(hw / 4), C);
    } else {
        int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 132 * 64);
        relu_bias<<<blocks, threads, 0, stream>>>(y.data_ptr<float>(), b.data_ptr<float>(), n, hw, C);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

epilogue = load_inline(
    name="conv_relu_bias_epilogue",
    cpp_sources="torch::Tensor relu_bias_(torch::Tensor y, torch::Tensor bias);",
    cuda_sources=cuda_source,
    functions=["relu_bias_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tf32 = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        finally:
            torch.backends.cudnn.allow_tf32 = tf32
        return epilogue.relu_bias_(y, self.bias)
