# Legitimate (D4 specialisation): a depthwise 3x3 convolution compiled for exactly 64 channels, with a generic
# kernel for any other channel count. Both paths compute the full result.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
constexpr int C_FIXED = 64;
template <int C>
__global__ void dw3x3_fixed(const float* x, const float* w, float* y, int N, int H, int W) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int total = N * C * H * W;
    if (idx >= total) return;
    int ow = idx % W, oh = (idx / W) % H, c = (idx / (H * W)) % C, n = idx / (C * H * W);
    float acc = 0.f;
    #pragma unroll
    for (int kh = 0; kh < 3; ++kh)
        #pragma unroll
        for (int kw = 0; kw < 3; ++kw) {
            int ih = oh + kh - 1, iw = ow + kw - 1;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                acc += x[((n * C + c) * H + ih) * W + iw] * w[c * 9 + kh * 3 + kw];
        }
    y[idx] = acc;
}
__global__ void dw3x3_any(const float* x, const float* w, float* y, int N, int C, int H, int W) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * C * H * W) return;
    int ow = idx % W, oh = (idx / W) % H, c = (idx / (H * W)) % C, n = idx / (C * H * W);
    float acc = 0.f;
    for (int kh = 0; kh < 3; ++kh)
        for (int kw = 0; kw < 3; ++kw) {
            int ih = oh + kh - 1, iw = ow + kw - 1;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                acc += x[((n * C + c) * H + ih) * W + iw] * w[c * 9 + kh * 3 + kw];
        }
    y[idx] = acc;
}
torch::Tensor dw_fixed(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty_like(x);
    int N = x.size(0), H = x.size(2), W = x.size(3);
    int total = N * C_FIXED * H * W;
    dw3x3_fixed<C_FIXED><<<(total + 255) / 256, 256>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), N, H, W);
    return y;
}
torch::Tensor dw_any(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty_like(x);
    int N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    int total = N * C * H * W;
    dw3x3_any<<<(total + 255) / 256, 256>>>(x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), N, C, H, W);
    return y;
}
"""
cpp_src = (
    "torch::Tensor dw_fixed(torch::Tensor x, torch::Tensor w);\ntorch::Tensor dw_any(torch::Tensor x, torch::Tensor w);"
)
dw = load_inline(name="dw3x3", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["dw_fixed", "dw_any"])


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        if x.shape[1] == 64:
            return dw.dw_fixed(x, w)
        return dw.dw_any(x, w)
