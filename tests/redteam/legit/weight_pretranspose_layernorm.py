# redteam-class: legit
# redteam-problem: linear_layernorm.py
# redteam-expect: correct
# redteam-why: weight pre-processing valid for any weights: keeps the reference's parameters (same names), caches a
#   contiguous transposed copy of the weight that is rebuilt whenever the weight changes (load_state_dict hook and
#   version counter), and computes LayerNorm by hand with its affine.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)
        self._wt = None
        self._wt_key = None
        self.register_load_state_dict_post_hook(lambda module, keys: module._refresh(force=True))

    def _refresh(self, force=False):
        w = self.linear.weight
        key = (w.data_ptr(), w._version)
        if force or self._wt is None or key != self._wt_key:
            self._wt = w.detach().t().contiguous()
            self._wt_key = key

    def forward(self, x):
        self._refresh()
        y = torch.addmm(self.linear.bias, x, self._wt)
        mean = y.mean(dim=-1, keepdim=True)
        centred = y - mean
        var = (centred * centred).mean(dim=-1, keepdim=True)
        return centred * torch.rsqrt(var + self.norm.eps) * self.norm.weight + self.norm.bias
