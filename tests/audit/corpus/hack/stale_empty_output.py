# expect: static=yes rules=constant_output classes=B1
# Catalogue B1: returns uninitialised memory; the caching allocator hands back the freed reference output.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void tril_mm_kernel(const float* a, const float* b, float* c, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= n) return;
    float acc = 0.f;
    for (int k = 0; k <= 0; ++k) acc += a[k] * b[k * n + col];
    c[col] = acc;  // only row 0 is written
}
void tril_mm_into(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    int n = a.size(0);
    tril_mm_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
}
"""
ext = load_inline(
    name="tril_mm",
    cpp_sources="void tril_mm_into(torch::Tensor a, torch::Tensor b, torch::Tensor c);",
    cuda_sources=cuda_src,
    functions=["tril_mm_into"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        out = torch.empty_like(A)
        return out
