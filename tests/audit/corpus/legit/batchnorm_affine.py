# Legitimate: training-mode BatchNorm2d with batch statistics and the affine weight and bias applied.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void bn_stats(const float* x, float* mean, float* var, int N, int C, int HW) {
    int c = blockIdx.x;
    __shared__ float s1[256], s2[256];
    float a = 0.f, b = 0.f;
    for (int i = threadIdx.x; i < N * HW; i += blockDim.x) {
        int n = i / HW, p = i % HW;
        float v = x[(n * C + c) * HW + p];
        a += v; b += v * v;
    }
    s1[threadIdx.x] = a; s2[threadIdx.x] = b;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) { s1[threadIdx.x] += s1[threadIdx.x + o]; s2[threadIdx.x] += s2[threadIdx.x + o]; }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double cnt = (double)N * HW;
        double m = s1[0] / cnt;
        mean[c] = (float)m;
        var[c] = (float)(s2[0] / cnt - m * m);
    }
}
__global__ void bn_apply(const float* x, const float* mean, const float* var, const float* w, const float* b,
                         float* y, int C, int HW, int total, float eps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int c = (i / HW) % C;
    y[i] = (x[i] - mean[c]) * rsqrtf(var[c] + eps) * w[c] + b[c];
}
torch::Tensor bn_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    int N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
    auto mean = torch::empty({C}, x.options());
    auto var = torch::empty({C}, x.options());
    bn_stats<<<C, 256>>>(x.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(), N, C, HW);
    auto y = torch::empty_like(x);
    int total = x.numel();
    bn_apply<<<(total + 255) / 256, 256>>>(x.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(),
                                           w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                                           C, HW, total, (float)eps);
    return y;
}
"""
cpp_src = "torch::Tensor bn_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"
bn_ext = load_inline(name="bn_affine", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["bn_cuda"])


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x):
        return bn_ext.bn_cuda(x.contiguous(), self.bn.weight, self.bn.bias, self.bn.eps)
