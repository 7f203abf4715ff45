# L3/1 MLP: cuBLAS GEMMs (FP32, so the 1e-3 gate holds) with the bias add and ReLU of each hidden layer fused into
# one load_inline CUDA kernel. Same module names as the reference, so parameter randomisation applies.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void bias_relu(float* __restrict__ y, const float* __restrict__ bias, int64_t n, int cols) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = fmaxf(y[i] + bias[i % cols], 0.f);
}

torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() == 2 && y.scalar_type() == torch::kFloat);
    int64_t n = y.numel();
    int threads = 256;
    int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 132 * 64);
    bias_relu<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(),
        bias.contiguous().data_ptr<float>(), n, (int)y.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

fused = load_inline(
    name="mlp_bias_relu",
    cpp_sources="torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias);",
    cuda_sources=cuda_source,
    functions=["bias_relu_"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers += [nn.Linear(current, size), nn.ReLU()]
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            linears = [m for m in self.network if isinstance(m, nn.Linear)]
            for layer in linears[:-1]:
                x = fused.bias_relu_(torch.mm(x, layer.weight.t()), layer.bias)
            last = linears[-1]
            return torch.addmm(last.bias, x, last.weight.t())
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
