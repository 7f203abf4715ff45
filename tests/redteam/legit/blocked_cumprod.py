# redteam-class: legit
# redteam-problem: cumprod.py
# redteam-expect: correct
# redteam-why: shape specialisation with a different evaluation order: cumprod within 4 blocks of 32 columns, then
#   each block scaled by the running product of the blocks before it; exact algebra, valid for any input.
import torch
import torch.nn as nn

BLOCK = 32


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        n, length = x.shape
        blocks = torch.cumprod(x.reshape(n, length // BLOCK, BLOCK), dim=2)
        carry = torch.cumprod(blocks[:, :, -1], dim=1)
        scale = torch.cat([torch.ones_like(carry[:, :1]), carry[:, :-1]], dim=1)
        return (blocks * scale.unsqueeze(2)).reshape(n, length)
