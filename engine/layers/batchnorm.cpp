// BatchNormalization, per channel (spatial inputs: over N*H*W; flat inputs (N, F): per feature over N).
//
// Training forward, with m the number of values per channel in the batch (all ranks' with sync_stats):
//   mean = sum(x) / m,  var = sum((x - mean)^2) / m  (biased, two passes, accumulated in double)
//   xn = (x - mean) / sqrt(var + eps),  y = gamma * xn + beta
//   running_mean = momentum * running_mean + (1 - momentum) * mean
//   running_var  = momentum * running_var  + (1 - momentum) * var * m / (m - 1)   (unbiased)
// Inference: y = (x - running_mean) / sqrt(running_var + eps) * gamma + beta.
// Backward (train mode statistics):
//   dbeta = sum(dy), dgamma = sum(dy * xn), dx = gamma / (std * m) * (m * dy - xn * dgamma - dbeta)
//
// Differences from PyDTNN (research notes §3.3), on purpose:
//   - running_var starts at 1 (PyDTNN: 0, so early inference divides by sqrt(eps)); running_mean at 0;
//   - the running variance is the unbiased one (PyDTNN's CPU path used the biased one, its cuDNN path
//     the unbiased one);
//   - sync_stats (or --sync_batchnorm) really synchronises: the per-channel sums of each pass and of the
//     backward's dgamma/dbeta are allreduced, so a 2-rank run normalises exactly like a 1-rank run over
//     the global batch. The parameter gradients stay local sums; the trainer's allreduce adds them up.
// gamma and beta are trainable parameters (in the Model's slab); the running statistics are buffers
// (the Model's state slab), saved in weight files as PyDTNN's running_mean/running_var keys.
// On the GPU the same computation runs in backend/gpu/batchnorm.cu (cuDNN, or dtnn's kernels when the
// statistics are synchronised).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "backend/gpu_ops.h"
#include "core/error.h"
#include "layers/fusable.h"
#include "layers/layers.h"
#include "backend/cpu/blas.h"
#include "parallel/communicator.h"

namespace dtnn {
namespace {

class BatchNorm final : public Layer, public InferenceAffine {
 public:
  explicit BatchNorm(const BatchNormSpec& spec) : spec_(spec) {}
  std::string type() const override { return "BatchNormalization"; }
  bool communicates_in_step() const override { return sync_; }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    layout_ = in.rank() == 3 ? ctx.layout : Layout::flat;
    DTNN_CHECK(in.rank() == 1 || in.rank() == 3, "BatchNormalization needs a flat or 3-D input, got ", in.str());
    channels_ = in.rank() == 1 ? in[0] : (layout_ == Layout::nhwc ? in[2] : in[0]);
    spatial_ = in.numel() / channels_;
    sync_ = (spec_.sync_stats || ctx.sync_batchnorm) && ctx.comm && ctx.comm->size() > 1;
    comm_ = ctx.comm;
    const Shape c{channels_};
    params_.push_back({"gamma", c, Init::ones, 0, 0, {}, {}, {}});
    params_.push_back({"beta", c, Init::zeros, 0, 0, {}, {}, {}});
    buffers_.push_back({"running_mean", c, Init::zeros, 0, 0, {}, {}, {}});
    buffers_.push_back({"running_var", c, Init::ones, 0, 0, {}, {}, {}});
    mean_.assign(channels_, 0.0);
    acc_.assign(channels_, 0.0);
    acc2_.assign(channels_, 0.0);
    chunk_acc_.assign(kChunks * 2 * channels_, 0.0);
    chunk_part_.assign(kChunks * 2 * channels_, 0.0f);
    inv_std_ = Tensor::zeros(c);
    scale_ = Tensor::zeros(c);
    shift_ = Tensor::zeros(c);
    konst_ = Tensor::zeros(c);
    reduce_ = Tensor::zeros(Shape{2 * channels_ + 1});
    if (ctx.gpu()) {
      gpu::BatchNormShape shape;
      shape.layout = layout_ == Layout::flat ? Layout::nchw : layout_;
      shape.c = channels_;
      shape.h = in.rank() == 3 ? (layout_ == Layout::nhwc ? in[0] : in[1]) : 1;
      shape.w = in.rank() == 3 ? (layout_ == Layout::nhwc ? in[1] : in[2]) : 1;
      shape.max_batch = ctx.max_batch;
      shape.epsilon = spec_.epsilon;
      shape.momentum = spec_.momentum;
      gpu_op_ = gpu::make_batchnorm(shape, sync_ ? &BatchNorm::device_allreduce : nullptr, this);
      scratch_ = ctx.workspace;  // dx of backward when the model wants none (cuDNN always writes one)
      scratch_->reserve(in.numel() * ctx.max_batch);
    }
    return out_sample_ = in;
  }

  void forward(const Tensor& x, const Tensor& y, Mode mode) override {
    const int64_t n = x.dim(0), C = channels_;
    if (gpu_op_) {
      if (mode == Mode::evaluate)
        gpu_op_->forward_inference(n, x.data(), y.data(), params_[0].value.data(), params_[1].value.data(),
                                   buffers_[0].value.data(), buffers_[1].value.data());
      else
        gpu_op_->forward_training(n, x.data(), y.data(), params_[0].value.data(), params_[1].value.data(),
                                  buffers_[0].value.data(), buffers_[1].value.data());
      return;
    }
    float* scale = scale_.data();
    float* shift = shift_.data();
    const float* gamma = params_[0].value.data();
    const float* beta = params_[1].value.data();
    float* rmean = buffers_[0].value.data();
    float* rvar = buffers_[1].value.data();
    if (mode == Mode::evaluate) {
      inference_affine(scale, shift);
      apply(x.data(), y.data(), n, scale, shift);
      return;
    }
    // Pass 1: mean.
    sums(x.data(), n, nullptr, acc_.data());
    double count = static_cast<double>(n * spatial_);
    if (sync_) count = allreduce(acc_.data(), count);
    for (int64_t c = 0; c < C; ++c) mean_[c] = acc_[c] / count;
    // Pass 2: variance around the mean (no cancellation of E[x^2] - E[x]^2).
    sums(x.data(), n, mean_.data(), acc_.data());
    if (sync_) allreduce(acc_.data(), 0.0);
    count_ = count;
    const double m = momentum(), unbias = count > 1 ? count / (count - 1) : 1.0;
    for (int64_t c = 0; c < C; ++c) {
      const double var = acc_[c] / count;
      const double inv = 1.0 / std::sqrt(var + spec_.epsilon);
      inv_std_.data()[c] = static_cast<float>(inv);
      scale[c] = static_cast<float>(gamma[c] * inv);
      shift[c] = static_cast<float>(beta[c] - mean_[c] * gamma[c] * inv);
      rmean[c] = static_cast<float>(m * rmean[c] + (1 - m) * mean_[c]);
      rvar[c] = static_cast<float>(m * rvar[c] + (1 - m) * var * unbias);
    }
    apply(x.data(), y.data(), n, scale, shift);
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    const int64_t n = x.dim(0), C = channels_;
    if (gpu_op_) {
      gpu_op_->backward(n, x.data(), dy.data(), dx.empty() ? scratch_->data : dx.data(), params_[0].value.data(),
                        params_[0].grad.data(), params_[1].grad.data());
      return;
    }
    const float* inv_std = inv_std_.data();
    // dbeta = sum(dy) into acc_, dgamma = sum(dy * (x - mean)) * inv_std into acc2_.
    dot_sums(x.data(), dy.data(), n);
    float* dgamma = params_[0].grad.data();
    float* dbeta = params_[1].grad.data();
    for (int64_t c = 0; c < C; ++c) {
      acc2_[c] *= inv_std[c];
      dgamma[c] = static_cast<float>(acc2_[c]);
      dbeta[c] = static_cast<float>(acc_[c]);
    }
    if (dx.empty()) return;
    if (sync_) {
      float* r = reduce_.data();
      for (int64_t c = 0; c < C; ++c) {
        r[c] = static_cast<float>(acc_[c]);
        r[C + c] = static_cast<float>(acc2_[c]);
      }
      comm_->allreduce_sum(r, 2 * C);
      for (int64_t c = 0; c < C; ++c) {
        acc_[c] = r[c];
        acc2_[c] = r[C + c];
      }
    }
    // dx = gamma*inv_std * (dy - dbeta/m - xn * dgamma/m), as a per-channel a*dy + b*x + c.
    float* a = scale_.data();  // reused: the forward's scale and shift are no longer needed
    float* b = shift_.data();
    float* k = konst_.data();
    for (int64_t ch = 0; ch < C; ++ch) {
      const double g = params_[0].value.data()[ch] * static_cast<double>(inv_std[ch]);
      const double t = acc2_[ch] / count_ * inv_std[ch];  // dgamma / m, in units of x
      a[ch] = static_cast<float>(g);
      b[ch] = static_cast<float>(-g * t);
      k[ch] = static_cast<float>(-g * (acc_[ch] / count_) + g * t * mean_[ch]);
    }
    affine2(dy.data(), x.data(), dx.data(), n, a, b, k);
  }

  int64_t channels() const override { return channels_; }
  void inference_affine(float* scale, float* shift) const override {
    const float* gamma = params_[0].value.data();
    const float* beta = params_[1].value.data();
    const float* rmean = buffers_[0].value.data();
    const float* rvar = buffers_[1].value.data();
    for (int64_t c = 0; c < channels_; ++c) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(rvar[c]) + spec_.epsilon);
      scale[c] = static_cast<float>(gamma[c] * inv);
      shift[c] = static_cast<float>(beta[c] - rmean[c] * gamma[c] * inv);
    }
  }

  double forward_flops() const override { return 2.0 * spatial_ * channels_; }

  std::string describe() const override {
    char buf[64];
    std::snprintf(buf, sizeof buf, "momentum=%.2f, eps=%g%s", spec_.momentum, spec_.epsilon, sync_ ? ", sync" : "");
    return buf;
  }

 private:
  double momentum() const { return spec_.momentum; }

  // Threads (cpu::threads()) and results: NCHW sums split channels (each summed over the batch in order);
  // NHWC sums split the rows into kChunks fixed chunks whose double partials are added in chunk order, so
  // the statistics do not depend on the thread count. The elementwise passes split rows or planes.
  static constexpr int64_t kChunks = 16;
  static constexpr int64_t kBlock = 64;  // rows per float partial sum (folded into double per block)
  static constexpr int64_t kParallelFloats = 1 << 15;  // smaller tensors stay on one thread

  // Row range [*r0, *r1) of chunk k of `rows` rows: boundaries on multiples of kBlock.
  static void chunk_rows(int64_t rows, int64_t k, int64_t* r0, int64_t* r1) {
    const int64_t blocks = (rows + kBlock - 1) / kBlock;
    *r0 = std::min(rows, blocks * k / kChunks * kBlock);
    *r1 = std::min(rows, blocks * (k + 1) / kChunks * kBlock);
  }

  // acc[c] = sum over the batch of x (center == null) or of (x - center[c])^2.
  void sums(const float* x, int64_t n, const double* center, double* acc) {
    const int64_t C = channels_, S = spatial_;
    const bool par = n * C * S > kParallelFloats;
    if (layout_ == Layout::nchw) {
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
      for (int64_t c = 0; c < C; ++c) {
        double a = 0.0;
        for (int64_t b = 0; b < n; ++b) {
          const float* row = x + (b * C + c) * S;
          float s = 0.0f;
          if (center) {
            const float mu = static_cast<float>(center[c]);
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < S; ++i) s += (row[i] - mu) * (row[i] - mu);
          } else {
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < S; ++i) s += row[i];
          }
          a += s;
        }
        acc[c] = a;
      }
      return;
    }
    // NHWC and flat: rows of C values. Float partial sums over blocks of rows, folded into double.
    const int64_t rows = n * S;
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
    for (int64_t k = 0; k < kChunks; ++k) {
      double* ca = chunk_acc_.data() + k * 2 * C;
      float* part = chunk_part_.data() + k * 2 * C;
      for (int64_t c = 0; c < C; ++c) ca[c] = 0.0;
      int64_t c0, c1;
      chunk_rows(rows, k, &c0, &c1);
      for (int64_t r0 = c0; r0 < c1; r0 += kBlock) {
        const int64_t r1 = std::min(c1, r0 + kBlock);
        for (int64_t c = 0; c < C; ++c) part[c] = 0.0f;
        for (int64_t r = r0; r < r1; ++r) {
          const float* row = x + r * C;
          if (center) {
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) {
              const float d = row[c] - static_cast<float>(center[c]);
              part[c] += d * d;
            }
          } else {
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) part[c] += row[c];
          }
        }
        for (int64_t c = 0; c < C; ++c) ca[c] += part[c];
      }
    }
    for (int64_t c = 0; c < C; ++c) acc[c] = 0.0;
    for (int64_t k = 0; k < kChunks; ++k)
      for (int64_t c = 0; c < C; ++c) acc[c] += chunk_acc_[k * 2 * C + c];
  }

  // acc_[c] = sum(dy), acc2_[c] = sum(dy * (x - mean)).
  void dot_sums(const float* x, const float* dy, int64_t n) {
    const int64_t C = channels_, S = spatial_;
    const bool par = n * C * S > kParallelFloats;
    if (layout_ == Layout::nchw) {
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
      for (int64_t c = 0; c < C; ++c) {
        double a = 0.0, a2 = 0.0;
        const float mu = static_cast<float>(mean_[c]);
        for (int64_t b = 0; b < n; ++b) {
          const float* xr = x + (b * C + c) * S;
          const float* gr = dy + (b * C + c) * S;
          float s = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s, s2)
          for (int64_t i = 0; i < S; ++i) {
            s += gr[i];
            s2 += gr[i] * (xr[i] - mu);
          }
          a += s;
          a2 += s2;
        }
        acc_[c] = a;
        acc2_[c] = a2;
      }
      return;
    }
    const int64_t rows = n * S;
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
    for (int64_t k = 0; k < kChunks; ++k) {
      double* ca = chunk_acc_.data() + k * 2 * C;
      float* p1 = chunk_part_.data() + k * 2 * C;
      float* p2 = p1 + C;
      for (int64_t c = 0; c < 2 * C; ++c) ca[c] = 0.0;
      int64_t c0, c1;
      chunk_rows(rows, k, &c0, &c1);
      for (int64_t r0 = c0; r0 < c1; r0 += kBlock) {
        const int64_t r1 = std::min(c1, r0 + kBlock);
        for (int64_t c = 0; c < C; ++c) p1[c] = p2[c] = 0.0f;
        for (int64_t r = r0; r < r1; ++r) {
          const float* xr = x + r * C;
          const float* gr = dy + r * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) {
            p1[c] += gr[c];
            p2[c] += gr[c] * (xr[c] - static_cast<float>(mean_[c]));
          }
        }
        for (int64_t c = 0; c < C; ++c) {
          ca[c] += p1[c];
          ca[C + c] += p2[c];
        }
      }
    }
    for (int64_t c = 0; c < C; ++c) acc_[c] = acc2_[c] = 0.0;
    for (int64_t k = 0; k < kChunks; ++k)
      for (int64_t c = 0; c < C; ++c) {
        acc_[c] += chunk_acc_[k * 2 * C + c];
        acc2_[c] += chunk_acc_[k * 2 * C + C + c];
      }
  }

  // y = x * scale[c] + shift[c].
  void apply(const float* x, float* y, int64_t n, const float* scale, const float* shift) const {
    const int64_t C = channels_, S = spatial_;
    const bool par = n * C * S > kParallelFloats;
    if (layout_ == Layout::nchw) {
#pragma omp parallel for collapse(2) schedule(static) num_threads(cpu::threads()) if (par)
      for (int64_t b = 0; b < n; ++b)
        for (int64_t c = 0; c < C; ++c) {
          const float* xr = x + (b * C + c) * S;
          float* yr = y + (b * C + c) * S;
          const float a = scale[c], s = shift[c];
#pragma omp simd
          for (int64_t i = 0; i < S; ++i) yr[i] = xr[i] * a + s;
        }
      return;
    }
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
    for (int64_t r = 0; r < n * S; ++r) {
      const float* xr = x + r * C;
      float* yr = y + r * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * scale[c] + shift[c];
    }
  }

  // out = a[c] * dy + b[c] * x + k[c].
  void affine2(const float* dy, const float* x, float* out, int64_t n, const float* a, const float* b,
               const float* k) const {
    const int64_t C = channels_, S = spatial_;
    const bool par = n * C * S > kParallelFloats;
    if (layout_ == Layout::nchw) {
#pragma omp parallel for collapse(2) schedule(static) num_threads(cpu::threads()) if (par)
      for (int64_t bb = 0; bb < n; ++bb)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t o = (bb * C + c) * S;
          const float ac = a[c], bc = b[c], kc = k[c];
#pragma omp simd
          for (int64_t i = 0; i < S; ++i) out[o + i] = ac * dy[o + i] + bc * x[o + i] + kc;
        }
      return;
    }
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
    for (int64_t r = 0; r < n * S; ++r) {
      const int64_t o = r * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) out[o + c] = a[c] * dy[o + c] + b[c] * x[o + c] + k[c];
    }
  }

  // Sums the C per-channel values of acc and a count over ranks (as floats); returns the global count.
  double allreduce(double* acc, double count) {
    float* r = reduce_.data();
    for (int64_t c = 0; c < channels_; ++c) r[c] = static_cast<float>(acc[c]);
    r[channels_] = static_cast<float>(count);
    comm_->allreduce_sum(r, channels_ + 1);
    for (int64_t c = 0; c < channels_; ++c) acc[c] = r[c];
    return r[channels_];
  }

  // Synchronised statistics on the GPU: sums `count` device floats over the ranks.
  static void device_allreduce(void* self, float* values, int64_t count) {
    static_cast<BatchNorm*>(self)->comm_->allreduce_sum_device(values, count);
  }

  BatchNormSpec spec_;
  std::unique_ptr<gpu::BatchNormOp> gpu_op_;
  SharedWorkspace* scratch_ = nullptr;
  int64_t channels_ = 0, spatial_ = 0;
  bool sync_ = false;
  Communicator* comm_ = nullptr;
  double count_ = 1.0;
  std::vector<double> mean_, acc_, acc2_;
  std::vector<double> chunk_acc_;   // kChunks x 2C: per-chunk partial sums (NHWC statistics)
  std::vector<float> chunk_part_;   // kChunks x 2C: per-chunk float partials of one block of rows
  Tensor inv_std_, scale_, shift_, konst_, reduce_;
};

}  // namespace

std::unique_ptr<Layer> make_batchnorm(const BatchNormSpec& spec) {
  DTNN_CHECK(spec.momentum >= 0.0 && spec.momentum <= 1.0, "BatchNormalization: momentum must be in [0, 1] (got ",
             spec.momentum, ")");
  DTNN_CHECK(spec.epsilon > 0.0, "BatchNormalization: epsilon must be positive (got ", spec.epsilon, ")");
  return std::make_unique<BatchNorm>(spec);
}

}  // namespace dtnn
