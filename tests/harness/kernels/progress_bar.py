# An honest kernel that draws a progress bar while it runs, as torch.compile's inductor does while it compiles on
# CUDA (tests/harness/test_progress_bar_thread.py): tqdm's monitor thread is not the kernel's work.
import torch
import torch.nn as nn
from tqdm import tqdm


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in tqdm(range(1), desc="compiling", disable=False):
            pass
        return torch.relu(x)
