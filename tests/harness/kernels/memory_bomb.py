# Grabs host memory until something stops it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hoard = []
        for _ in range(64):
            hoard.append(torch.ones(256 * 1024 * 1024 // 4))  # 256 MiB each, touched
        return torch.relu(x)
