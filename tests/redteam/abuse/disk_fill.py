# redteam-class: abuse
# redteam-problem: matmul.py
# redteam-expect: rejected
# redteam-timeout: 60
# redteam-options: {"file_size_mb": 256}
# redteam-why: writes a file in its working directory in 64 MiB pieces, up to 4 GiB; the file-size limit must stop it
#   (the suite runs it with file_size_mb=256) and the file must not survive the evaluation.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        block = b"\0" * (64 << 20)
        with open(os.path.join(os.getcwd(), "filler.bin"), "wb") as fh:
            for _ in range(64):
                fh.write(block)
                fh.flush()
        return torch.matmul(A, B)
