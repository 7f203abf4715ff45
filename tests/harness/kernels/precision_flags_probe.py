import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right only under full FP32 flags: ReLU, plus 1 wherever it is called with TF32 allowed. So it passes the gate
    exactly when its correctness calls run under the reference's flags, and its timed outputs (under the TF32
    baseline's flags) are wrong, which the timed-output re-check reports."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tf32 = torch.backends.cuda.matmul.allow_tf32 or torch.get_float32_matmul_precision() != "highest"
        return torch.relu(x) + (1.0 if tf32 else 0.0)
