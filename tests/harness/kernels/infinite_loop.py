# Starts a grandchild process (its command line carries MARKER, so the test can look for it on the host), then never
# returns.
import subprocess
import sys

import torch.nn as nn

MARKER = "__MARKER__"


class ModelNew(nn.Module):
    def forward(self, x):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARKER])
        while True:
            pass
