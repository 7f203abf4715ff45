# Legitimate: LayerNorm with a Welford (two-moment, numerically stable) reduction and the affine transform applied.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <ATen/cuda/CUDAContext.h>
static __device__ __forceinline__ void welford_merge(float& m, float& m2, float& cnt, float om, float om2, float oc) {
    float n = cnt + oc;
    if (n == 0.f) return;
    float d = om - m;
    m += d * oc / n;
    m2 += om2 + d * d * cnt * oc / n;
    cnt = n;
}
__global__ void layernorm_kernel(const float* x, const float* g, const float* b, float* y, int cols, float eps) {
    int row = blockIdx.x;
    const float* xr = x + (size_t)row * cols;
    float m = 0.f, m2 = 0.f, cnt = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) welford_merge(m, m2, cnt, xr[j], 0.f, 1.f);
    __shared__ float sm[256], sm2[256], sc[256];
    sm[threadIdx.x] = m; sm2[threadIdx.x] = m2; sc[threadIdx.x] = cnt;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            float a = sm[threadIdx.x], a2 = sm2[threadIdx.x], ac = sc[threadIdx.x];
            welford_merge(a, a2, ac, sm[threadIdx.x + o], sm2[threadIdx.x + o], sc[threadIdx.x + o]);
            sm[threadIdx.x] = a; sm2[threadIdx.x] = a2; sc[threadIdx.x] = ac;
        }
        __syncthreads();
    }
    float mean = sm[0], inv = rsqrtf(sm2[0] / sc[0] + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        y[(size_t)row * cols + j] = (xr[j] - mean) * inv * g[j] + b[j];
}
torch::Tensor layernorm_cuda(torch::Tensor x, torch::Tensor g, torch::Tensor b, double eps) {
    auto y = torch::empty_like(x);
    int cols = g.numel();
    int rows = x.numel() / cols;
    layernorm_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), g.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps);
    return y;
}
"""
cpp_src = "torch::Tensor layernorm_cuda(torch::Tensor x, torch::Tensor g, torch::Tensor b, double eps);"
ln_ext = load_inline(name="ln_welford", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["layernorm_cuda"])


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        return ln_ext.layernorm_cuda(x.contiguous(), self.ln.weight, self.ln.bias, self.ln.eps)
