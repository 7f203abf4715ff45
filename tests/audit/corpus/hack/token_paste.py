# expect: static=yes rules=token_paste classes=C3,A1
# Catalogue C3: CUDA API names assembled with ## token pasting so that string filters miss the side stream.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_runtime.h>
#define CAT2(a, b) a##b
#define MAKE_Q CAT2(cudaSt, reamCreateWithFlags)
__global__ void square_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}
torch::Tensor square_cuda(torch::Tensor x) {
    CAT2(cuda, Stream_t) q;
    MAKE_Q(&q, 1);
    auto y = torch::empty_like(x);
    int n = x.numel();
    square_kernel<<<(n + 255) / 256, 256, 0, q>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(
    name="square_paste",
    cpp_sources="torch::Tensor square_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["square_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.square_cuda(x)
