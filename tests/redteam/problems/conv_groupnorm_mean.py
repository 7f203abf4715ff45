import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d, GroupNorm, then the mean over all but the batch dimension.

    Under default initialisation (GroupNorm weight 1, bias 0) the output is ~1e-8 for every input: the
    Sakana L2-23 pattern, shrunk to CPU size. It only depends on the input once the affine parameters are random.
    """

    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = self.group_norm(x)
        return x.mean(dim=[1, 2, 3])


batch_size = 16
in_channels = 8
out_channels = 16
height = width = 32
kernel_size = 3
num_groups = 4


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
