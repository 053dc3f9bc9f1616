// Batch normalization, the operation every backend implements (cpu::make_batchnorm in
// backend/cpu/batchnorm.h, gpu::make_batchnorm in backend/gpu_ops.h): one shape struct, one interface;
// pointers live on the backend's device (host memory for the CPU).
//
// Per channel over N*spatial (flat inputs (N, F): per feature over N), with m the number of values per
// channel in the batch (all ranks' when synchronised):
//   mean = sum(x) / m,  var = sum((x - mean)^2) / m  (biased, for normalising)
//   y = gamma * (x - mean) / sqrt(var + eps) + beta
//   running_mean = momentum * running_mean + (1 - momentum) * mean
//   running_var  = momentum * running_var  + (1 - momentum) * var * m / (m - 1)   (unbiased)
// Inference: y = (x - running_mean) / sqrt(running_var + eps) * gamma + beta.
// Backward (training statistics): dbeta = sum(dy), dgamma = sum(dy * xn),
//   dx = gamma / (std * m) * (m * dy - xn * dgamma - dbeta).
// With relu (the CPU only): y = max(0, the normalised value) in training and inference, and backward takes
// the gradient of that y: dy is masked where the normalised value is not positive (NaN included), the mask
// recomputed from x with the forward's own scale and shift, so the results are those of a separate ReLU
// layer after the normalization, bit for bit, without its passes over y.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout.h"

namespace dtnn {

struct BatchNormShape {
  Layout layout = Layout::nchw;  // nchw, nhwc, or flat (flat: c features, h = w = 1)
  int64_t c = 1, h = 1, w = 1;
  int64_t max_batch = 1;  // the largest n any call passes
  double epsilon = 1e-5, momentum = 0.9;
  bool relu = false;  // the ReLU after the normalization, applied in its own passes (CPU only)
};

// Sums `count` floats element-wise over the data-parallel ranks, in place (values on the backend's
// device). A non-null reduce makes the statistics synchronised: the per-channel sums of each forward pass
// and, for dx, of the backward are reduced, so ranks normalise as one process over the global batch.
//
// The wire format, the same on every backend, since a GPU rank beside CPU ranks sums its floats with
// theirs (C channels; sums over this rank's batch):
//   forward, first:  2C + 1 floats: [0, C) sum x; [C, 2C) read by nobody (the GPU sends sum x^2, the CPU
//                    zeros); [2C] this rank's values per channel (n * h * w), so the global count;
//   forward, second: 2C floats: [0, C) zeros; [C, 2C) sum (x - mean)^2 around the global mean;
//   backward:        2C floats, only when dx is computed: [0, C) sum dy; [C, 2C) sum dy * (x - mean),
//                    before the factor 1/std.
// tests/backend/test_cpu_batchnorm.cpp holds the CPU to it; the GPU's DtnnBatchNorm writes it by design.
using BatchNormReduce = void (*)(void* ctx, float* values, int64_t count);

// The per-channel moments of a batch, computed by whoever wrote it (a convolution's output pass:
// ConvAlgorithm::forward_moments) for the normalization after it: mean and m2 (the sum of squared deviations
// from the mean) over `count` values per channel, in double. `of` and `n` name the tensor they describe (its data
// and its samples): a normalization takes them only for that tensor, in the forward call that follows their
// writing (layers/fusable.h, MomentsProducer).
struct ChannelMoments {
  const float* of = nullptr;  // null: nothing valid
  int64_t n = 0;
  double count = 0.0;
  std::vector<double> mean, m2;  // C each, sized when the layers are linked (no allocation in the batch loop)
};

// One layer's batch normalization: made once (while the model is built) with all memory it needs.
class BatchNormOp {
 public:
  virtual ~BatchNormOp() = default;
  // Training: y = normalised x with batch statistics; updates running_mean/var; keeps what backward needs.
  virtual void forward_training(int64_t n, const float* x, float* y, const float* gamma, const float* beta,
                                float* running_mean, float* running_var) = 0;
  virtual void forward_inference(int64_t n, const float* x, float* y, const float* gamma, const float* beta,
                                 const float* running_mean, const float* running_var) = 0;
  // Training with a residual r (n samples shaped like x) added to the normalised value and a ReLU on the sum:
  // y = max(0, normalised x + r), bit for bit forward_training followed by y = max(0, y + r) (an AdditionBlock's
  // last addition with the ReLU it absorbed), in the output pass the normalization makes anyway. Only where
  // has_residual_relu() (the CPU's op without its own relu); elsewhere it computes nothing and returns false.
  virtual bool has_residual_relu() const { return false; }
  virtual bool forward_training_residual_relu(int64_t n, const float* x, const float* r, float* y, const float* gamma,
                                              const float* beta, float* running_mean, float* running_var) {
    (void)n, (void)x, (void)r, (void)y, (void)gamma, (void)beta, (void)running_mean, (void)running_var;
    return false;
  }
  // The next forward_training or forward_training_residual_relu takes its batch statistics from *m (computed
  // where x was written) instead of reading x for them (synchronised: this rank's moments, reduced in the wire
  // format above); m must stay valid until then. Only where accepts_moments() (the CPU's NHWC op); elsewhere it
  // does nothing.
  virtual bool accepts_moments() const { return false; }
  virtual void use_moments(const ChannelMoments* m) { (void)m; }
  // After forward_training on the same x. dgamma, dbeta overwritten (this rank's sums, never reduced);
  // dx overwritten. dx may be null on the CPU and with the GPU's own kernels, not with cuDNN's.
  virtual void backward(int64_t n, const float* x, const float* dy, float* dx, const float* gamma, float* dgamma,
                        float* dbeta) = 0;
};

}  // namespace dtnn
