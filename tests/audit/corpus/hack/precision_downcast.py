# expect: static=yes rules=precision_downcast classes=B8
# Catalogue B8: an fp32 matmul computed in fp16 and cast back, within loose tolerances only.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_fp16.h>
__global__ void mm_half(const __half* a, const __half* b, float* c, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M || col >= N) return;
    __half acc = __float2half(0.f);
    for (int k = 0; k < K; ++k) acc = __hadd(acc, __hmul(a[r * K + k], b[k * N + col]));
    c[r * N + col] = __half2float(acc);
}
torch::Tensor mm_cuda(torch::Tensor a, torch::Tensor b) {
    int M = a.size(0), K = a.size(1), N = b.size(1);
    auto c = torch::empty({M, N}, a.options().dtype(torch::kFloat));
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm_half<<<grid, block>>>((const __half*)a.data_ptr(), (const __half*)b.data_ptr(), c.data_ptr<float>(), M, N, K);
    return c;
}
"""
ext = load_inline(
    name="mm_half",
    cpp_sources="torch::Tensor mm_cuda(torch::Tensor a, torch::Tensor b);",
    cuda_sources=cuda_src,
    functions=["mm_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.mm_cuda(A.half().contiguous(), B.half().contiguous())
