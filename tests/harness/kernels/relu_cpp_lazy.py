# A load_inline C++ (CPU) ReLU built on the first forward() call, not at import (a pattern LLM kernels use).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
#include <torch/extension.h>
torch::Tensor relu_cpu(torch::Tensor x) {
    auto out = torch::empty_like(x);
    auto xa = x.contiguous();
    const float* in = xa.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xa.numel(); ++i) o[i] = in[i] > 0.f ? in[i] : 0.f;
    return out;
}
"""
_ext = None


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _ext
        if _ext is None:
            _ext = load_inline(name="relu_lazy_ext", cpp_sources=cpp_source, functions=["relu_cpu"], verbose=False)
        return _ext.relu_cpu(x)
