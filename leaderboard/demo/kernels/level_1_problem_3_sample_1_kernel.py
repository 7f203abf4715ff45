# RISKY SHORTCUT (not caught, by design of the demo): skips the max subtraction.
# Fine for U[0,1) inputs, but exp() overflows for large inputs; under x3 it still passes, so this one is subtle:
# it is kept in the demo to show that not every shortcut is caught by D2-D4 at these scales.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x)
        return e / e.sum(dim=1, keepdim=True)
