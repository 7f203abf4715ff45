# expect: static=yes rules=tensor_subclass classes=A3
# Catalogue A3: a lazy Tensor subclass defers the real computation until the checker touches the output.
import torch
import torch.nn as nn


class LazyResult(torch.Tensor):
    @staticmethod
    def __new__(cls, x):
        out = torch.Tensor._make_subclass(cls, torch.empty(0, device=x.device))
        out._src = x
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args = [torch.softmax(a._src, dim=1) if isinstance(a, LazyResult) else a for a in args]
        return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return LazyResult(x)
