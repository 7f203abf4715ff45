# expect: static=yes rules=pointer_key,cache_output_replay classes=A6
# Catalogue A6: the result is cached under the input's device address and replayed on later calls.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void gelu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.f + erff(v * 0.70710678f)); }
}
torch::Tensor gelu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    gelu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(
    name="gelu_cached",
    cpp_sources="torch::Tensor gelu_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["gelu_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cache = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key in self._cache:
            return self._cache[key]
        out = ext.gelu_cuda(x)
        self._cache[key] = out
        return out
