// Batch normalization on the GPU through cuDNN's spatial batch normalization (per channel over N*H*W;
// flat (N, F) inputs are described as N x F x 1 x 1, so "spatial" is per feature over N).
// cuDNN's conventions match dtnn's: the running variance is the unbiased one, and its exponential average
// factor is dtnn's (1 - momentum). Epsilon must be >= CUDNN_BN_MIN_EPSILON (1e-5).
#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {
namespace {

class CudnnBatchNorm final : public BatchNormOp {
 public:
  explicit CudnnBatchNorm(const BatchNormShape& s) : s_(s) {
    DTNN_CHECK(s.epsilon >= CUDNN_BN_MIN_EPSILON, "BatchNormalization on the GPU: epsilon ", s.epsilon,
               " is below cuDNN's minimum ", CUDNN_BN_MIN_EPSILON);
    DTNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    DTNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&param_));
    DTNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(param_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                                static_cast<int>(s.c), 1, 1));
    save_mean_ = static_cast<float*>(device_alloc(s.c * sizeof(float)));
    save_inv_ = static_cast<float*>(device_alloc(s.c * sizeof(float)));
  }
  ~CudnnBatchNorm() override {
    cudnnDestroyTensorDescriptor(x_);
    cudnnDestroyTensorDescriptor(param_);
    device_free(save_mean_);
    device_free(save_inv_);
  }

  void forward_training(int64_t n, const float* x, float* y, const float* gamma, const float* beta, float* rmean,
                        float* rvar) override {
    describe(n);
    const float one = 1.0f, zero = 0.0f;
    DTNN_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        cudnn(), mode(), &one, &zero, x_, x, x_, y, param_, gamma, beta, 1.0 - s_.momentum, rmean, rvar, s_.epsilon,
        save_mean_, save_inv_));
  }

  void forward_inference(int64_t n, const float* x, float* y, const float* gamma, const float* beta,
                         const float* rmean, const float* rvar) override {
    describe(n);
    const float one = 1.0f, zero = 0.0f;
    DTNN_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(cudnn(), mode(), &one, &zero, x_, x, x_, y, param_, gamma,
                                                             beta, rmean, rvar, s_.epsilon));
  }

  void backward(int64_t n, const float* x, const float* dy, float* dx, const float* gamma, float* dgamma,
                float* dbeta) override {
    DTNN_ASSERT(dx != nullptr);  // the layer passes scratch memory when it needs no input gradient
    describe(n);
    const float one = 1.0f, zero = 0.0f;
    DTNN_CUDNN_CHECK(cudnnBatchNormalizationBackward(cudnn(), mode(), &one, &zero, &one, &zero, x_, x, x_, dy, x_, dx,
                                                     param_, gamma, dgamma, dbeta, s_.epsilon, save_mean_, save_inv_));
  }

 private:
  cudnnBatchNormMode_t mode() const { return CUDNN_BATCHNORM_SPATIAL; }
  void describe(int64_t n) {
    if (n == described_n_) return;
    const int N = static_cast<int>(n), C = static_cast<int>(s_.c), H = static_cast<int>(s_.h),
              W = static_cast<int>(s_.w);
    DTNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, s_.layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, N, C, H, W));
    described_n_ = n;
  }

  BatchNormShape s_;
  cudnnTensorDescriptor_t x_ = nullptr, param_ = nullptr;
  float* save_mean_ = nullptr;
  float* save_inv_ = nullptr;
  int64_t described_n_ = -1;
};

}  // namespace

std::unique_ptr<BatchNormOp> make_batchnorm(const BatchNormShape& shape, DeviceReduce reduce, void* reduce_ctx) {
  if (reduce)
    unsupported("--sync_batchnorm is not implemented on the GPU yet (synchronised statistics need dtnn's own "
                "kernels; cuDNN normalises one rank's batch)");
  return std::make_unique<CudnnBatchNorm>(shape);
}

}  // namespace dtnn::gpu
