# expect: static=yes rules=l2_persistence classes=A8
# Catalogue A8: the working set is marked L2-persisting so the harness's cache flush does not evict it.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    auto stream = at::cuda::getCurrentCUDAStream();
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 64 << 20);
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = a.data_ptr();
    attr.accessPolicyWindow.num_bytes = a.numel() * sizeof(float);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    auto c = torch::empty_like(a);
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    return c;
}
"""
ext = load_inline(
    name="add_l2",
    cpp_sources="torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);",
    cuda_sources=cuda_src,
    functions=["add_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_cuda(a, b)
