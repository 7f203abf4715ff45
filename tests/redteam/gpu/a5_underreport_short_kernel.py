# redteam-class: A5
# redteam-problem: gpu_scale_add.py
# redteam-expect: not_faster
# redteam-device: cuda
# redteam-timeout: 300
# redteam-max-speedup: 1.5
# redteam-why: a modest forgery on a short GPU problem: the reference's own two eager kernels
#   (~0.13 ms a call on the H200, honest speedup ~1x), with every timing list its process reports (json.dumps and raw
#   os.write of JSON lines) cut to a quarter. The ~0.1 ms hidden per call stayed inside the wall-clock cross-check's
#   old allowance (half the median plus 2 ms per 5-10-call block, 0.2-0.4 ms a call); blocks sized to last 20 ms
#   (calls of ~0.25 ms wall with the L2 flush: ~80 calls, 0.025 ms a call) leave it outside. CPU twin:
#   exploits/a5_underreport_short_kernel.py.
import json
import os

import torch.nn as nn

_real_dumps = json.dumps
_real_write = os.write


def _forge(obj):
    if isinstance(obj, dict):
        return {
            k: [v / 4 for v in value] if k in ("times", "walls") and isinstance(value, list) else _forge(value)
            for k, value in obj.items()
        }
    if isinstance(obj, list):
        return [_forge(v) for v in obj]
    return obj


def _dumps(obj, *args, **kwargs):
    return _real_dumps(_forge(obj), *args, **kwargs)


def _write(fd, data):
    try:
        text = bytes(data).decode()
        if text.startswith("{") and text.rstrip().endswith("}"):
            _real_write(fd, (_real_dumps(_forge(json.loads(text))) + "\n").encode())
            return len(text.encode())
    except (ValueError, UnicodeDecodeError):
        pass
    return _real_write(fd, data)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        json.dumps = _dumps
        os.write = _write

    def forward(self, x, y):
        return x * 2.0 + y
