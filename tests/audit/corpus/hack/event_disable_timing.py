# expect: static=yes rules=event_disable_timing classes=A4
# Catalogue A4 (native): recreates timing events without timing so the harness reads a bogus elapsed time.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_runtime.h>
__global__ void hardtanh_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fminf(fmaxf(x[i], -1.f), 1.f);
}
torch::Tensor hardtanh_cuda(torch::Tensor x) {
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    auto y = torch::empty_like(x);
    int n = x.numel();
    hardtanh_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    cudaEventRecord(ev);
    return y;
}
"""
ext = load_inline(
    name="hardtanh_ev",
    cpp_sources="torch::Tensor hardtanh_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["hardtanh_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.hardtanh_cuda(x)
