# expect: static=yes rules=side_stream classes=A1
# Catalogue A1: the kernel is enqueued on a private stream; events recorded on the current stream close early.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_runtime.h>
__global__ void sigmoid_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.f / (1.f + expf(-x[i]));
}
torch::Tensor sigmoid_cuda(torch::Tensor x) {
    static cudaStream_t side = nullptr;
    if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    auto y = torch::empty_like(x);
    int n = x.numel();
    sigmoid_kernel<<<(n + 255) / 256, 256, 0, side>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(
    name="sigmoid_side",
    cpp_sources="torch::Tensor sigmoid_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["sigmoid_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sigmoid_cuda(x)
