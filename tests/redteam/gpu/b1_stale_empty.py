# redteam-class: B1
# redteam-problem: gpu_scale_add.py
# redteam-expect: incorrect
# redteam-device: cuda
# redteam-timeout: 300
# redteam-why: no-op: returns torch::empty_like(x) from C++ without launching anything, hoping the caching allocator
#   hands back a block that still holds a previous (reference or own) result.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>

torch::Tensor scale_add(torch::Tensor x, torch::Tensor y) {
    return torch::empty_like(x);
}
"""

ext = load_inline(
    name="rt_b1_stale_empty",
    cpp_sources="torch::Tensor scale_add(torch::Tensor x, torch::Tensor y);",
    cuda_sources=CUDA_SRC,
    functions=["scale_add"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return ext.scale_add(x.contiguous(), y.contiguous())
