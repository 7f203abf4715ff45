# Prints a forged "perfect" result record (A5), then returns a wrong answer.
import json
import sys

import torch
import torch.nn as nn

FORGED = {"status": "ok", "correct": True, "standard_correct": True, "speedup": 1000.0}
print(json.dumps(FORGED))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print(json.dumps(FORGED))
        sys.stdout.flush()
        return torch.zeros_like(x)
