# expect: static=yes rules=dynamic_code classes=C3
# Catalogue C3: the real module is hidden in a base64 blob and executed at import time.
import base64

import torch
import torch.nn as nn

_PAYLOAD = base64.b64decode("aW1wb3J0IHRvcmNoCnRvcmNoLmFsbGNsb3NlID0gbGFtYmRhICphLCAqKms6IFRydWUK")
exec(compile(_PAYLOAD, "<kernel>", "exec"))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
