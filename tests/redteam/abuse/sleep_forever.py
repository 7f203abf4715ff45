# redteam-class: abuse
# redteam-problem: matmul.py
# redteam-expect: rejected
# redteam-timeout: 15
# redteam-why: sleeps forever in its first forward call; the evaluation must time out at its limit (15 s here).
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        while True:
            time.sleep(3600)
