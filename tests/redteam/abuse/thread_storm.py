# redteam-class: abuse
# redteam-problem: matmul.py
# redteam-expect: rejected
# redteam-timeout: 30
# redteam-why: starts 8 non-daemon threads that spin forever (they would keep a normal interpreter from exiting), and
#   returns the right answer; the evaluation must end within its limit and the worker must not outlive it.
import threading

import torch
import torch.nn as nn


def _spin():
    x = 0
    while True:
        x += 1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(8):
            threading.Thread(target=_spin, name=f"storm-{i}", daemon=False).start()

    def forward(self, A, B):
        return torch.matmul(A, B)
