# expect: static=yes rules=cache_output_replay classes=A6
# Catalogue A6: a module-level result bank keyed on shape; every timed call after the first is a dict lookup.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_RESULTS = {}


@triton.jit
def swish_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * tl.sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        key = (tuple(x.shape), x.dtype)
        hit = _RESULTS.get(key)
        if hit is not None:
            return hit
        y = torch.empty_like(x)
        n = x.numel()
        swish_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        _RESULTS[key] = y
        return y
