# A reference that asks for its user name, as torch's inductor does for its cache folder on CUDA
# (tests/harness/test_user_name.py).
import getpass

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert getpass.getuser()
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
