// Batch normalization on the GPU (semantics of backend/batchnorm.h, as backend/cpu/batchnorm.cpp), two
// implementations:
//
// cuDNN (the default): cudnnBatchNormalization{ForwardTraining,ForwardInference,Backward} in spatial mode;
//   flat (N, F) inputs are described as N x F x 1 x 1. cuDNN's conventions match dtnn's: the running
//   variance is the unbiased one and its exponential average factor is dtnn's (1 - momentum); epsilon must
//   be >= CUDNN_BN_MIN_EPSILON (1e-5). One launch per direction, which small models need (measured on an
//   H100, results/baselines/gpu_h100.md: resnet20 trains at 18.2k samples/s with it, 14.7k with the own
//   kernels below, whose 4 launches per direction cost more than they save there).
//
// dtnn's own kernels (synchronised statistics, --sync_batchnorm, which cuDNN cannot do): below. On
// ResNet-50's first BN layer they run in 0.54 ms forward / 0.57 ms backward against cuDNN's 1.8 / 1.27 ms,
// but ResNet-50 training was no faster overall with them (897 vs 918 images/s).
//
// Element (n, c, s) of a layer with C channels and S spatial positions sits at ((n*C + c)*S + s) in NCHW and
// at ((n*S + s)*C + c) in NHWC and flat (S = 1) tensors.
//   statistics  one block per (channel, slice of samples) accumulates sum x and sum x^2 in double
//               (NHWC: a block per (channel group of 32, slice of rows), threads along channels); one thread
//               per channel adds the slices in a fixed order (deterministic) and derives mean, variance,
//               the normalisation's scale and shift, and the running statistics.
//   synchronised  (a BatchNormReduce callback) two passes as on the CPU: the per-channel sums are allreduced,
//               then the squared deviations around the global mean, so ranks normalise alike.
//   apply       y = x * scale[c] + shift[c] (inference: from the running statistics).
//   backward    per channel sum dy and sum dy*(x - mean) (allreduced when synchronised, for dx only), then
//               dx = a[c]*dy + b[c]*x + k[c].
#include <algorithm>
#include <memory>
#include <vector>

#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {
namespace {

struct Geometry {
  int64_t n, c, s;
  bool nchw;
};

// Modes of the reduction kernel: what each element contributes to (acc1, acc2).
enum Mode : int { kSumAndSquares = 0, kDeviations = 1, kBackward = 2 };

__device__ inline void block_sum2(double& a, double& b) {
  __shared__ double sa[32], sb[32];
  for (int o = 16; o > 0; o /= 2) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    sa[warp] = a;
    sb[warp] = b;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    a = lane < warps ? sa[lane] : 0.0;
    b = lane < warps ? sb[lane] : 0.0;
    for (int o = 16; o > 0; o /= 2) {
      a += __shfl_xor_sync(0xffffffffu, a, o);
      b += __shfl_xor_sync(0xffffffffu, b, o);
    }
  }
}

// NCHW: block (c = blockIdx.x, slice = blockIdx.y) covers samples [n0, n1); threads run along s.
// part[(c * slices + slice) * 2 + {0, 1}].
__global__ void reduce_nchw(Geometry g, int slices, int mode, const float* x, const float* dy, const float* mean,
                            double* part) {
  const int64_t c = blockIdx.x;
  const int slice = blockIdx.y;
  const int64_t per = (g.n + slices - 1) / slices, n0 = slice * per, n1 = min(g.n, n0 + per);
  const float mu = mean ? mean[c] : 0.0f;
  double a = 0.0, b = 0.0;
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t base = (n * g.c + c) * g.s;
    float fa = 0.0f, fb = 0.0f;  // per-row float partials (rows are at most a few thousand per thread)
    for (int64_t s = threadIdx.x; s < g.s; s += blockDim.x) {
      const float v = x[base + s];
      if (mode == kSumAndSquares) {
        fa += v;
        fb += v * v;
      } else if (mode == kDeviations) {
        fb += (v - mu) * (v - mu);
      } else {
        const float d = dy[base + s];
        fa += d;
        fb += d * (v - mu);
      }
    }
    a += fa;
    b += fb;
  }
  block_sum2(a, b);
  if (threadIdx.x == 0) {
    part[(c * slices + slice) * 2] = a;
    part[(c * slices + slice) * 2 + 1] = b;
  }
}

// NHWC / flat: block (channel group of 32 = blockIdx.x, slice of rows = blockIdx.y); threadIdx.x is the
// channel within the group (coalesced), threadIdx.y strides over the slice's rows.
__global__ void reduce_nhwc(Geometry g, int slices, int mode, const float* x, const float* dy, const float* mean,
                            double* part) {
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int slice = blockIdx.y;
  const int64_t rows = g.n * g.s, per = (rows + slices - 1) / slices, r0 = slice * per, r1 = min(rows, r0 + per);
  double a = 0.0, b = 0.0;
  if (c < g.c) {
    const float mu = mean ? mean[c] : 0.0f;
    for (int64_t r = r0 + threadIdx.y; r < r1; r += blockDim.y) {
      const float v = x[r * g.c + c];
      if (mode == kSumAndSquares) {
        a += v;
        b += static_cast<double>(v) * v;
      } else if (mode == kDeviations) {
        b += static_cast<double>(v - mu) * (v - mu);
      } else {
        const float d = dy[r * g.c + c];
        a += d;
        b += static_cast<double>(d) * (v - mu);
      }
    }
  }
  __shared__ double sa[8][32], sb[8][32];
  sa[threadIdx.y][threadIdx.x] = a;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < g.c) {
    for (int y = 1; y < blockDim.y; ++y) {
      a += sa[y][threadIdx.x];
      b += sb[y][threadIdx.x];
    }
    part[(c * slices + slice) * 2] = a;
    part[(c * slices + slice) * 2 + 1] = b;
  }
}

// Adds each channel's slices in order: tot[c] = (sum of acc1, sum of acc2); also writes them as floats into
// red (2C values: acc1 then acc2) for a synchronising reduction.
__global__ void totals(int64_t channels, int slices, const double* part, double* tot, float* red) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= channels) return;
  double a = 0.0, b = 0.0;
  for (int i = 0; i < slices; ++i) {
    a += part[(c * slices + i) * 2];
    b += part[(c * slices + i) * 2 + 1];
  }
  tot[2 * c] = a;
  tot[2 * c + 1] = b;
  if (red) {
    red[c] = static_cast<float>(a);
    red[channels + c] = static_cast<float>(b);
  }
}

// Forward statistics. Without sync: tot holds (sum x, sum x^2) of this rank. With sync: mean_in holds the
// global mean (from the first pass) and red[C + c] the global sum of squared deviations.
__global__ void finish_forward(int64_t channels, double count, const double* tot, const float* red, bool sync,
                               const float* gamma, const float* beta, float* rmean, float* rvar, float* mean,
                               float* inv_std, float* scale, float* shift, double eps, double momentum) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= channels) return;
  double mu, var;
  if (sync) {
    mu = mean[c];
    var = red[channels + c] / count;
  } else {
    mu = tot[2 * c] / count;
    var = fmax(tot[2 * c + 1] / count - mu * mu, 0.0);
  }
  const double inv = rsqrt(var + eps);
  mean[c] = static_cast<float>(mu);
  inv_std[c] = static_cast<float>(inv);
  scale[c] = static_cast<float>(gamma[c] * inv);
  shift[c] = static_cast<float>(beta[c] - mu * gamma[c] * inv);
  const double unbias = count > 1 ? count / (count - 1) : 1.0;
  rmean[c] = static_cast<float>(momentum * rmean[c] + (1 - momentum) * mu);
  rvar[c] = static_cast<float>(momentum * rvar[c] + (1 - momentum) * var * unbias);
}

// The global mean of a synchronised first pass: red[c] is the global sum, red[2C] the global count.
__global__ void global_mean(int64_t channels, const float* red, float* mean) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c < channels) mean[c] = red[c] / red[2 * channels];
}

__global__ void inference_affine(int64_t channels, const float* gamma, const float* beta, const float* rmean,
                                 const float* rvar, double eps, float* scale, float* shift) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= channels) return;
  const double inv = rsqrt(static_cast<double>(rvar[c]) + eps);
  scale[c] = static_cast<float>(gamma[c] * inv);
  shift[c] = static_cast<float>(beta[c] - rmean[c] * gamma[c] * inv);
}

// Backward: tot = (sum dy, sum dy*(x - mean)) of this rank (param gradients); red, when synchronised, the
// global ones (dx). dx = a*dy + b*x + k.
__global__ void finish_backward(int64_t channels, double count, const double* tot, const float* red, bool sync,
                                const float* gamma, const float* mean, const float* inv_std, float* dgamma,
                                float* dbeta, float* a, float* b, float* k) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= channels) return;
  const double inv = inv_std[c];
  dgamma[c] = static_cast<float>(tot[2 * c + 1] * inv);
  dbeta[c] = static_cast<float>(tot[2 * c]);
  const double sdy = sync ? red[c] : tot[2 * c];
  const double sdyx = (sync ? red[channels + c] : tot[2 * c + 1]) * inv;  // = dgamma over all ranks
  const double g = gamma[c] * inv, t = sdyx / count * inv;
  a[c] = static_cast<float>(g);
  b[c] = static_cast<float>(-g * t);
  k[c] = static_cast<float>(-g * (sdy / count) + g * t * mean[c]);
}

__device__ inline int64_t channel_of(const Geometry& g, int64_t i) { return g.nchw ? (i / g.s) % g.c : i % g.c; }

__global__ void apply(Geometry g, int64_t total, const float* x, float* y, const float* scale, const float* shift) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)blockDim.x * gridDim.x) {
    const int64_t c = channel_of(g, i);
    y[i] = x[i] * scale[c] + shift[c];
  }
}

__global__ void apply_backward(Geometry g, int64_t total, const float* dy, const float* x, float* dx, const float* a,
                               const float* b, const float* k) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)blockDim.x * gridDim.x) {
    const int64_t c = channel_of(g, i);
    dx[i] = a[c] * dy[i] + b[c] * x[i] + k[c];
  }
}

unsigned channel_blocks(int64_t channels) { return static_cast<unsigned>((channels + 127) / 128); }

class DtnnBatchNorm final : public BatchNormOp {
 public:
  DtnnBatchNorm(const BatchNormShape& s, BatchNormReduce reduce, void* ctx) : s_(s), reduce_(reduce), ctx_(ctx) {
    const int64_t C = s.c;
    // Enough blocks to fill the GPU about four times over, split along samples (NCHW) or rows (NHWC).
    const int64_t target = 4 * static_cast<int64_t>(multiprocessors());
    const int64_t groups = s.layout == Layout::nchw ? C : (C + 31) / 32;
    const int64_t most = s.layout == Layout::nchw ? std::max<int64_t>(1, s.max_batch)
                                                  : std::max<int64_t>(1, s.max_batch * s.h * s.w / 8);
    slices_ = static_cast<int>(std::clamp<int64_t>((target + groups - 1) / groups, 1, std::min<int64_t>(most, 1024)));
    part_ = static_cast<double*>(device_alloc(static_cast<size_t>(C) * slices_ * 2 * sizeof(double)));
    tot_ = static_cast<double*>(device_alloc(static_cast<size_t>(C) * 2 * sizeof(double)));
    floats_ = static_cast<float*>(device_alloc(static_cast<size_t>(C) * 8 * sizeof(float) + 64));
    mean_ = floats_;
    inv_std_ = floats_ + C;
    scale_ = floats_ + 2 * C;
    shift_ = floats_ + 3 * C;
    kk_ = floats_ + 4 * C;
    red_ = floats_ + 5 * C;  // 2C + 1 floats
  }
  ~DtnnBatchNorm() override {
    device_free(part_);
    device_free(tot_);
    device_free(floats_);
  }

  void forward_training(int64_t n, const float* x, float* y, const float* gamma, const float* beta, float* rmean,
                        float* rvar) override {
    const Geometry g = geometry(n);
    const int64_t C = s_.c;
    const double count = static_cast<double>(n * g.s);
    if (!reduce_) {
      reduce(g, kSumAndSquares, x, nullptr, nullptr, nullptr);
      finish_forward<<<channel_blocks(C), 128, 0, stream()>>>(C, count, tot_, nullptr, false, gamma, beta, rmean, rvar,
                                                               mean_, inv_std_, scale_, shift_, s_.epsilon, s_.momentum);
      DTNN_LAUNCH_CHECK();
    } else {
      // backend/batchnorm.h's wire format, which the CPU's reductions follow too (a GPU rank beside CPU ranks)
      reduce(g, kSumAndSquares, x, nullptr, nullptr, red_);  // red = (sum x, -)
      set_value(red_ + 2 * C, static_cast<float>(count));
      reduce_(ctx_, red_, 2 * C + 1);
      global_mean<<<channel_blocks(C), 128, 0, stream()>>>(C, red_, mean_);
      DTNN_LAUNCH_CHECK();
      const float global_count = total_count();
      reduce(g, kDeviations, x, nullptr, mean_, red_);  // red = (-, sum (x - mean)^2)
      reduce_(ctx_, red_, 2 * C);
      finish_forward<<<channel_blocks(C), 128, 0, stream()>>>(C, global_count, tot_, red_, true, gamma, beta, rmean,
                                                               rvar, mean_, inv_std_, scale_, shift_, s_.epsilon,
                                                               s_.momentum);
      DTNN_LAUNCH_CHECK();
      count_ = global_count;
    }
    if (!reduce_) count_ = count;
    elementwise(g, x, y, scale_, shift_);
  }

  void forward_inference(int64_t n, const float* x, float* y, const float* gamma, const float* beta,
                         const float* rmean, const float* rvar) override {
    inference_affine<<<channel_blocks(s_.c), 128, 0, stream()>>>(s_.c, gamma, beta, rmean, rvar, s_.epsilon, scale_,
                                                                  shift_);
    DTNN_LAUNCH_CHECK();
    elementwise(geometry(n), x, y, scale_, shift_);
  }

  void backward(int64_t n, const float* x, const float* dy, float* dx, const float* gamma, float* dgamma,
                float* dbeta) override {
    const Geometry g = geometry(n);
    const int64_t C = s_.c;
    reduce(g, kBackward, x, dy, mean_, reduce_ && dx ? red_ : nullptr);
    if (reduce_ && dx) reduce_(ctx_, red_, 2 * C);
    // a, b, k: scale_, shift_ and kk_ (the forward's scale and shift are not needed any more).
    finish_backward<<<channel_blocks(C), 128, 0, stream()>>>(C, count_, tot_, red_, reduce_ && dx, gamma, mean_,
                                                              inv_std_, dgamma, dbeta, scale_, shift_, kk_);
    DTNN_LAUNCH_CHECK();
    if (!dx) return;
    const int64_t total = n * C * g.s;
    apply_backward<<<blocks_for(total), 256, 0, stream()>>>(g, total, dy, x, dx, scale_, shift_, kk_);
    DTNN_LAUNCH_CHECK();
  }

 private:
  Geometry geometry(int64_t n) const { return {n, s_.c, s_.h * s_.w, s_.layout == Layout::nchw}; }

  // Per-channel (acc1, acc2) into tot_ (and, when red is given, into red as floats).
  void reduce(const Geometry& g, int mode, const float* x, const float* dy, const float* mean, float* red) {
    if (g.nchw) {
      reduce_nchw<<<dim3(static_cast<unsigned>(g.c), static_cast<unsigned>(slices_)), 256, 0, stream()>>>(
          g, slices_, mode, x, dy, mean, part_);
    } else {
      reduce_nhwc<<<dim3(static_cast<unsigned>((g.c + 31) / 32), static_cast<unsigned>(slices_)), dim3(32, 8), 0,
                    stream()>>>(g, slices_, mode, x, dy, mean, part_);
    }
    DTNN_LAUNCH_CHECK();
    totals<<<channel_blocks(g.c), 128, 0, stream()>>>(g.c, slices_, part_, tot_, red);
    DTNN_LAUNCH_CHECK();
  }

  void elementwise(const Geometry& g, const float* x, float* y, const float* scale, const float* shift) {
    const int64_t total = g.n * g.c * g.s;
    apply<<<blocks_for(total), 256, 0, stream()>>>(g, total, x, y, scale, shift);
    DTNN_LAUNCH_CHECK();
  }

  // The synchronised element count (red_[2C] after the first allreduce), read by the host once per step.
  float total_count() {
    float v = 0.0f;
    copy_to_host(&v, red_ + 2 * s_.c, sizeof v);
    return v;
  }

  BatchNormShape s_;
  BatchNormReduce reduce_;
  void* ctx_;
  int slices_ = 1;
  double* part_ = nullptr;
  double* tot_ = nullptr;
  float* floats_ = nullptr;
  float *mean_ = nullptr, *inv_std_ = nullptr, *scale_ = nullptr, *shift_ = nullptr, *kk_ = nullptr, *red_ = nullptr;
  double count_ = 1.0;
};

// One value per channel (a batch of one sample of a flat or 1x1 input: a rank's short last batch, or its
// share of an uneven split) is what cuDNN's training forward cannot take: its running variance divides by
// N - 1 (NaN, or CUDNN_STATUS_BAD_PARAM in some versions). The CPU keeps the biased variance there
// (unbias = 1); so does the own kernels' finish_forward, which such batches go to, forward and backward,
// from an instance made with the layer (no allocation in the batch loop).
class CudnnBatchNorm final : public BatchNormOp {
 public:
  explicit CudnnBatchNorm(const BatchNormShape& s) : s_(s) {
    DTNN_CHECK(s.epsilon >= CUDNN_BN_MIN_EPSILON, "BatchNormalization on the GPU: epsilon ", s.epsilon,
               " is below cuDNN's minimum ", CUDNN_BN_MIN_EPSILON);
    if (s.h * s.w == 1) single_ = std::make_unique<DtnnBatchNorm>(s, nullptr, nullptr);
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
    single_active_ = single_ && n == 1;
    if (single_active_) return single_->forward_training(n, x, y, gamma, beta, rmean, rvar);
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
    DTNN_ASSERT(dx != nullptr);  // cuDNN always writes dx: the layer passes scratch memory when it wants none
    if (single_active_) return single_->backward(n, x, dy, dx, gamma, dgamma, dbeta);  // its forward's statistics
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
  std::unique_ptr<DtnnBatchNorm> single_;  // one value per channel (above); null unless h * w == 1
  bool single_active_ = false;             // the last training forward went to single_
};

}  // namespace

std::unique_ptr<BatchNormOp> make_batchnorm(const BatchNormShape& shape, BatchNormReduce reduce, void* reduce_ctx,
                                            bool own_kernels) {
  DTNN_CHECK(shape.c > 0 && shape.h > 0 && shape.w > 0 && shape.max_batch > 0, "BatchNormalization on the GPU: bad shape");
  DTNN_CHECK(!shape.relu, "BatchNormalization on the GPU: the ReLU runs as its own layer (no fused kernel)");
  BatchNormShape s = shape;
  if (s.layout == Layout::flat) s.layout = Layout::nchw;  // (N, F) as N x F x 1 x 1, cuDNN's description
  if (reduce || own_kernels) return std::make_unique<DtnnBatchNorm>(s, reduce, reduce_ctx);
  return std::make_unique<CudnnBatchNorm>(s);
}

}  // namespace dtnn::gpu
