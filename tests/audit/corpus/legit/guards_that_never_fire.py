# Legitimate: guards the problem's inputs never trigger, as real LLM kernels write them (DeepSeek's Triton
# kernels for KernelBench): an early return for empty inputs, fp32 upcasts chosen inline for the kernel's arguments,
# a fallback to PyTorch for other dtypes or devices, and a kernel reached through an alias made in __init__.
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline


@triton.jit
def row_sum_kernel(a_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        acc += tl.load(a_ptr + row * cols + start + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def row_sum(a: torch.Tensor) -> torch.Tensor:
    if a.numel() == 0:
        return a
    if (not a.is_cuda) or (a.dtype != torch.float32):
        return a.sum(dim=1)
    out = torch.empty(a.shape[0], device=a.device, dtype=a.dtype)
    a_acc = a if a.dtype == torch.float32 else a.to(torch.float32)
    row_sum_kernel[(a.shape[0],)](
        a_acc,
        out if out.dtype == torch.float32 else out.to(torch.float32),
        a.shape[1],
        BLOCK=1024,
    )
    return out


cuda_src = r"""
__global__ void tanh_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = tanhf(x[i]);
}
torch::Tensor tanh_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    tanh_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = load_inline(
            name="tanh_alias",
            cpp_sources="torch::Tensor tanh_cuda(torch::Tensor x);",
            cuda_sources=cuda_src,
            functions=["tanh_cuda"],
        )
        self.activation = self.ext.tanh_cuda

    def forward(self, a):
        return self.activation(row_sum(a).unsqueeze(1).contiguous())
