# Legitimate: a kernel written for several dtypes (the pattern of real LLM kernels, e.g. Kevin-32B's and DeepSeek's
# KernelBench outputs): the host code dispatches on the input's dtype, a table maps torch dtypes to Triton's, and an
# fp32 input never takes the half branch. Naming a reduced dtype is not computing in it (B8 is a conversion).
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_fp16.h>
template <typename T>
__global__ void scale_kernel(const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + x[i];
}
torch::Tensor scale_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    if (x.scalar_type() == torch::kFloat32) {
        scale_kernel<float><<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    } else if (x.scalar_type() == torch::kHalf) {
        scale_kernel<__half><<<(n + 255) / 256, 256>>>(
            reinterpret_cast<const __half*>(x.data_ptr()), reinterpret_cast<__half*>(y.data_ptr()), n);
    }
    return y;
}
"""
ext = load_inline(
    name="scale_dispatch",
    cpp_sources="torch::Tensor scale_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["scale_cuda"],
)

TRITON_DTYPES = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0).to(OUT), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        assert x.dtype in (torch.float16, torch.bfloat16, torch.float32), "unsupported dtype"
        use_tensor_cores = x.dtype in [torch.float16, torch.bfloat16]
        y = ext.scale_cuda(x.contiguous())
        out = torch.empty_like(y)
        n = y.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](y, out, n, OUT=TRITON_DTYPES[y.dtype], BLOCK=1024)
        return out if not use_tensor_cores else out
