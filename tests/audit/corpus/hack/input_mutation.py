# expect: static=yes rules=input_mutation classes=B5
# Catalogue B5: the candidate zeroes its inputs so a reference computed afterwards agrees with a zero output.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void fill_kernel(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 0.f;
}
torch::Tensor zeros_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    fill_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(
    name="zero_in",
    cpp_sources="torch::Tensor zeros_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["zeros_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a.zero_()
        b.zero_()
        return ext.zeros_cuda(a)
