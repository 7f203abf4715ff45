# expect: static=yes rules=thread_or_process classes=A2
# Catalogue A2: forward returns an empty buffer at once; a background thread fills it after the timer stops.
import threading

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void softplus_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = log1pf(expf(x[i]));
}
void softplus_into(torch::Tensor x, torch::Tensor y) {
    int n = x.numel();
    softplus_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
}
"""
ext = load_inline(
    name="softplus_thread",
    cpp_sources="void softplus_into(torch::Tensor x, torch::Tensor y);",
    cuda_sources=cuda_src,
    functions=["softplus_into"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        worker = threading.Thread(target=ext.softplus_into, args=(x, y), daemon=True)
        worker.start()
        return y
