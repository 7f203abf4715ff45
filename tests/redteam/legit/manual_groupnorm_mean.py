# redteam-class: legit
# redteam-problem: conv_groupnorm_mean.py
# redteam-expect: correct
# redteam-why: fused reduction valid for any weights: the mean over (C, H, W) of GroupNorm's output only needs each
#   channel's spatial mean and each group's mean and variance:
#   mean_c(gamma_c * (mu_c - mu_g) / sigma_g + beta_c), so the normalised map is never written out.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias)
        n, c = y.shape[:2]
        g = self.group_norm.num_groups
        grouped = y.reshape(n, g, -1)
        mu_g = grouped.mean(dim=2)
        var_g = grouped.var(dim=2, unbiased=False)
        mu_c = y.mean(dim=(2, 3)).reshape(n, g, c // g)
        normed = (mu_c - mu_g.unsqueeze(2)) * torch.rsqrt(var_g + self.group_norm.eps).unsqueeze(2)
        per_channel = normed.reshape(n, c) * self.group_norm.weight + self.group_norm.bias
        return per_channel.mean(dim=1)
