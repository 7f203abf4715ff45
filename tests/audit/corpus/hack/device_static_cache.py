# expect: static=yes rules=cuda_persistent_state classes=A6
# Catalogue A6 (native): the first result is kept in a static device buffer and memcpy'd out on later calls.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_runtime.h>
__device__ float g_result[1 << 24];
__global__ void exp_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = expf(x[i]);
}
torch::Tensor exp_cuda(torch::Tensor x) {
    static bool computed = false;
    auto y = torch::empty_like(x);
    int n = x.numel();
    float* bank = nullptr;
    cudaGetSymbolAddress((void**)&bank, g_result);
    if (!computed) {
        exp_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), bank, n);
        computed = true;
    }
    cudaMemcpy(y.data_ptr<float>(), bank, n * sizeof(float), cudaMemcpyDeviceToDevice);
    return y;
}
"""
ext = load_inline(
    name="exp_bank",
    cpp_sources="torch::Tensor exp_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["exp_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.exp_cuda(x)
