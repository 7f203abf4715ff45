# Returns a tensor subclass (A3 lazy output family).
import torch
import torch.nn as nn


class LazyTensor(torch.Tensor):
    pass


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x).as_subclass(LazyTensor)
