# Legitimate (D4): a kernel specialised for the problem's channel count, guarded by an assertion that raises for
# other shapes rather than returning something else.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#define CHANNELS 3
#define BLOCK 256
__global__ void channel_mean(const float* x, float* y, int N, int HW) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= N * HW) return;
    int n = i / HW, p = i % HW;
    float s = 0.f;
    #pragma unroll
    for (int c = 0; c < CHANNELS; ++c) s += x[(n * CHANNELS + c) * HW + p];
    y[i] = s / CHANNELS;
}
torch::Tensor channel_mean_cuda(torch::Tensor x) {
    int N = x.size(0), HW = x.size(2) * x.size(3);
    auto y = torch::empty({N, 1, x.size(2), x.size(3)}, x.options());
    channel_mean<<<(N * HW + BLOCK - 1) / BLOCK, BLOCK>>>(x.data_ptr<float>(), y.data_ptr<float>(), N, HW);
    return y;
}
"""
ext = load_inline(
    name="chan_mean3",
    cpp_sources="torch::Tensor channel_mean_cuda(torch::Tensor x);",
    cuda_sources=cuda_src,
    functions=["channel_mean_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        assert x.shape[1] == 3, "kernel compiled for 3 input channels"
        return ext.channel_mean_cuda(x.contiguous())
