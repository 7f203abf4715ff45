# redteam-class: abuse
# redteam-problem: matmul.py
# redteam-expect: rejected
# redteam-timeout: 60
# redteam-options: {"host_memory_mb": 1024}
# redteam-why: allocates and touches 1 GiB blocks until it holds 64 GiB, far beyond the host's memory; the harness's
#   memory limit must stop it (the suite runs it with host_memory_mb=1024) and the next evaluation must run normally.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.hoard = []

    def forward(self, A, B):
        for _ in range(64):
            self.hoard.append(torch.ones(1 << 28))  # 1 GiB of float32, written (not just reserved)
        return torch.matmul(A, B)
