# redteam-class: legit
# redteam-problem: gpu_scale_add.py
# redteam-expect: correct
# redteam-device: cuda
# redteam-timeout: 300
# redteam-why: legitimate CUDA-graph capture (D4): the same graph as the stale-replay exploit, but every call copies
#   its inputs into the static buffers before replaying, so the result is right for any input.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_add_kernel(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                                 long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) out[i] = 2.0f * x[i] + y[i];
}

torch::Tensor scale_add(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x);
    long n = x.numel();
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    if (blocks > 4096) blocks = 4096;
    scale_add_kernel<<<(int)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(
    name="rt_legit_graph",
    cpp_sources="torch::Tensor scale_add(torch::Tensor x, torch::Tensor y);",
    cuda_sources=CUDA_SRC,
    functions=["scale_add"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None

    def _capture(self, x, y):
        self.static_x, self.static_y = x.clone(), y.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                ext.scale_add(self.static_x, self.static_y)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = ext.scale_add(self.static_x, self.static_y)

    def forward(self, x, y):
        if self.graph is None:
            self._capture(x.contiguous(), y.contiguous())
        self.static_x.copy_(x)
        self.static_y.copy_(y)
        self.graph.replay()
        return self.static_out.clone()
