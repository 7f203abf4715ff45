# expect: static=yes rules=subclass_reference classes=D3
# Catalogue D3 (Kevin's inherit-and-pass): ModelNew inherits the reference Model and changes nothing.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


class ModelNew(Model):
    pass
