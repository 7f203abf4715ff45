# A kernel that asks for its user name, as torch's inductor does for its cache folder on CUDA
# (tests/harness/test_user_name.py).
import getpass

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert getpass.getuser()
        return torch.relu(x)
