# Legitimate: a scratch buffer for the partial sums is allocated once per shape and reused; the returned output is
# fresh on every call. Also keeps a small launch-configuration cache (ints only).
import torch
import torch.nn as nn
import triton
import triton.language as tl

_BLOCK_FOR_COLS = {}


@triton.jit
def row_sum_partial(x_ptr, part_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(part_ptr + row * tl.num_programs(1) + chunk, tl.sum(x, axis=0))


@triton.jit
def row_sum_final(part_ptr, out_ptr, n_chunks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    p = tl.load(part_ptr + row * n_chunks + offs, mask=offs < n_chunks, other=0.0)
    tl.store(out_ptr + row, tl.sum(p, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self._partials = None

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        block = _BLOCK_FOR_COLS.get(cols)
        if block is None:
            block = min(4096, triton.next_power_of_2(cols))
            _BLOCK_FOR_COLS[cols] = block
        chunks = triton.cdiv(cols, block)
        if self._partials is None or self._partials.shape != (rows, chunks):
            self._partials = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
        out = torch.empty((rows, 1), device=x.device, dtype=x.dtype)
        row_sum_partial[(rows, chunks)](x, self._partials, cols, BLOCK=block)
        row_sum_final[(rows,)](self._partials, out, chunks, BLOCK=triton.next_power_of_2(chunks))
        return out
