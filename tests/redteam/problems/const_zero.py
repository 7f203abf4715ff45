import torch
import torch.nn as nn


class Model(nn.Module):
    """Degenerate problem (the L2-80 pattern): max over dim 1 with keepdim, minus its own mean over that size-1
    dimension, is zero for every input, so GELU returns zeros. The evaluator must report reference_constant."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.max(x, dim=1, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return torch.nn.functional.gelu(x)


batch_size = 128
in_features = 256
out_features = 256


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
