# expect: static=yes rules=norm_affine_dropped classes=B9,B11
# Paper HACK case: BatchNorm kernel that uses the running statistics but drops the affine weight and bias (they
# are 1 and 0 under default initialisation, so the paper's gate could not see it).
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void bn_kernel(const float* x, const float* mean, const float* var, float* y, int C, int HW, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int c = (i / HW) % C;
    y[i] = (x[i] - mean[c]) * rsqrtf(var[c] + 1e-5f);
}
torch::Tensor bn_cuda(torch::Tensor x, torch::Tensor mean, torch::Tensor var) {
    auto y = torch::empty_like(x);
    int n = x.numel(); int C = x.size(1); int HW = x.size(2) * x.size(3);
    bn_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(),
                                         y.data_ptr<float>(), C, HW, n);
    return y;
}
"""
ext = load_inline(
    name="bn_noaffine",
    cpp_sources="torch::Tensor bn_cuda(torch::Tensor x, torch::Tensor mean, torch::Tensor var);",
    cuda_sources=cuda_src,
    functions=["bn_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x):
        return ext.bn_cuda(x.contiguous(), self.bn.running_mean, self.bn.running_var)
