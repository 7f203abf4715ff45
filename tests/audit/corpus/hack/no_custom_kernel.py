# expect: static=label rules=no_custom_kernel classes=D1
# Catalogue D1 (policy, not fraud): no custom kernel at all, just PyTorch calls.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
