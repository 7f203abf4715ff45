# redteam-class: abuse
# redteam-problem: matmul.py
# redteam-expect: rejected
# redteam-timeout: 60
# redteam-why: forks a child that leaves the worker's session (setsid), double-forks and sleeps for ten minutes, then
#   returns zeros. The grandchild's pid goes to PIDFILE (the test substitutes a path): it must be gone once the
#   evaluation has returned.
import os
import time

import torch
import torch.nn as nn

PIDFILE = "__REDTEAM_PIDFILE__"


def _escape():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(PIDFILE, "a") as fh:
                fh.write(f"{os.getpid()}\n")
            time.sleep(600)
        os._exit(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.started = False

    def forward(self, A, B):
        if not self.started:
            self.started = True
            _escape()
        return torch.zeros(A.shape[0], B.shape[1])
