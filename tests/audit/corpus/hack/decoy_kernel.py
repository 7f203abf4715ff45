# expect: static=yes rules=decoy_kernel classes=D2
# Catalogue D2: a CUDA kernel is compiled but never called; PyTorch does all the work.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void mm_kernel(const float* a, const float* b, float* c, int n) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n && col < n) {
        float s = 0.f;
        for (int k = 0; k < n; ++k) s += a[r * n + k] * b[k * n + col];
        c[r * n + col] = s;
    }
}
torch::Tensor mm_cuda(torch::Tensor a, torch::Tensor b) {
    int n = a.size(0);
    auto c = torch::empty_like(a);
    dim3 blk(16, 16), grd((n + 15) / 16, (n + 15) / 16);
    mm_kernel<<<grd, blk>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    return c;
}
"""
matmul_ext = load_inline(
    name="mm_decoy",
    cpp_sources="torch::Tensor mm_cuda(torch::Tensor a, torch::Tensor b);",
    cuda_sources=cuda_src,
    functions=["mm_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)
