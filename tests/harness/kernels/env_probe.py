# Reports what the candidate process can see, in its error (its folder is on a filesystem that goes with the
# evaluation, so a file there cannot be read afterwards): the test reads the JSON after "SEEN ".
import json
import os

import torch
import torch.nn as nn

env = dict(os.environ)
SEEN = {
    "keys": sorted(env),
    "leaks": sorted(key for key, value in env.items() if "leak-me" in value),
    "home": env.get("HOME"),
    "extensions": env.get("TORCH_EXTENSIONS_DIR"),
    "cwd": os.getcwd(),
    "uid": os.getuid(),
    "groups": os.getgroups(),
}
raise RuntimeError("SEEN " + json.dumps(SEEN))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)
