# Leaves a Python thread running after forward returns (A2 deferred work).
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        threading.Thread(target=time.sleep, args=(30,), name="deferred-work", daemon=True).start()
        return torch.relu(x)
