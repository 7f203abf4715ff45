# expect: static=yes rules=introspection classes=B6
# Catalogue B6: walks the garbage collector to find the reference output tensor and returns a copy of it.
import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj is not x and obj.dtype == x.dtype:
                return obj.clone()
        return torch.tanh(x)
