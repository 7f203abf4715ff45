# expect: static=yes rules=input_passthrough classes=B4
# Paper HACK case: ReLU "kernel" that returns its input (exact on torch.rand inputs, wrong for negatives).
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void noop_kernel(const float* x, int n) {}
torch::Tensor warm(torch::Tensor x) {
    noop_kernel<<<1, 1>>>(x.data_ptr<float>(), 0);
    return x;
}
"""
ext = load_inline(
    name="relu_identity", cpp_sources="torch::Tensor warm(torch::Tensor x);", cuda_sources=cuda_src, functions=["warm"]
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        ext.warm(x)
        return x
