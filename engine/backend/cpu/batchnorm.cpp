#include "backend/cpu/batchnorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/blas.h"
#include "core/error.h"
#include "core/moments.h"

namespace dtnn::cpu {
namespace {

constexpr int64_t kLanes = 16;  // channels a register group of the NHWC statistics keeps

// The fused ReLU (BatchNormShape::relu), in relu_forward's and relu_backward's own words: the output is v where
// v > 0, else 0 (NaN included); the gradient passes where the normalised value x * a + s was positive, that
// value recomputed with the forward's scale and shift, so it is the one the forward clamped.
template <bool kRelu>
inline float clamp(float v) {
  return !kRelu || v > 0.0f ? v : 0.0f;
}
template <bool kRelu>
inline float masked(float dy, float x, float a, float s) {
  return !kRelu || x * a + s > 0.0f ? dy : 0.0f;
}

// NHWC statistics of channels [c0, c0 + 16) over rows [r0, r1) of C values, added to part[0..16) (float, in row
// order per channel: the same sums as a loop over every channel). Center (kCenter): sum (x - mu)^2, else sum x.
// The 16 accumulators are a local array of constant size, so they stay in registers across the rows instead of
// going through memory that might alias x (3x slower for resnet20's 16-channel layers).
template <bool kCenter>
void sums16(const float* x, int64_t C, int64_t r0, int64_t r1, int64_t c0, const float* mu, float* part) {
  float a[kLanes] = {}, m[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) m[j] = kCenter ? mu[c0 + j] : 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = x + r * C + c0;
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) {
      const float d = row[j] - m[j];
      a[j] += kCenter ? d * d : row[j];
    }
  }
  for (int64_t j = 0; j < kLanes; ++j) part[c0 + j] += a[j];
}

// The mean and the sum of squared deviations from it of channels [c0, c0 + 16) over rows [r0, r1) (a block of
// at most 64 rows: it stays in L1 between the two passes), into bmean[c] and bm2[c] (double). The second pass
// sums d = x - mu around the float estimate mu of the first as well, and corrects by it (mean = mu + sum d / n,
// m2 = sum d^2 - (sum d)^2 / n): mu's own rounding (large values: 1e4's float sum of 64 is off by units) drops out.
void block_moments16(const float* x, int64_t C, int64_t r0, int64_t r1, int64_t c0, double* bmean, double* bm2) {
  float s[kLanes] = {}, q[kLanes] = {}, e[kLanes] = {}, mu[kLanes];
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = x + r * C + c0;
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) s[j] += row[j];
  }
  const float inv = 1.0f / static_cast<float>(r1 - r0);
  for (int64_t j = 0; j < kLanes; ++j) mu[j] = s[j] * inv;
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = x + r * C + c0;
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) {
      const float d = row[j] - mu[j];
      e[j] += d;
      q[j] += d * d;
    }
  }
  const double rows = static_cast<double>(r1 - r0);
  for (int64_t j = 0; j < kLanes; ++j) {
    bmean[c0 + j] = mu[j] + e[j] / rows;
    bm2[c0 + j] = std::max(0.0, q[j] - static_cast<double>(e[j]) * e[j] / rows);
  }
}

// block_moments16 for the channels [c0, C) past the last group of 16.
void block_moments_tail(const float* x, int64_t C, int64_t r0, int64_t r1, int64_t c0, double* bmean, double* bm2) {
  const double rows = static_cast<double>(r1 - r0);
  for (int64_t c = c0; c < C; ++c) {
    float s = 0.0f, q = 0.0f, e = 0.0f;
    for (int64_t r = r0; r < r1; ++r) s += x[r * C + c];
    const float mu = s / static_cast<float>(r1 - r0);
    for (int64_t r = r0; r < r1; ++r) {
      const float d = x[r * C + c] - mu;
      e += d;
      q += d * d;
    }
    bmean[c] = mu + e / rows;
    bm2[c] = std::max(0.0, q - static_cast<double>(e) * e / rows);
  }
}

// sum g and sum g * (x - mu) of channels [c0, c0 + 16) over rows [r0, r1), added to p1 and p2 (as sums16);
// g is dy, masked by the ReLU of x * sc + sh with kRelu.
template <bool kRelu>
void dot_sums16(const float* x, const float* dy, int64_t C, int64_t r0, int64_t r1, int64_t c0, const float* mu,
                const float* sc, const float* sh, float* p1, float* p2) {
  float a[kLanes] = {}, a2[kLanes] = {}, m[kLanes], ra[kLanes], rs[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) {
    m[j] = mu[c0 + j];
    ra[j] = kRelu ? sc[c0 + j] : 0.0f;
    rs[j] = kRelu ? sh[c0 + j] : 0.0f;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * C + c0;
    const float* gr = dy + r * C + c0;
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) {
      const float g = masked<kRelu>(gr[j], xr[j], ra[j], rs[j]);
      a[j] += g;
      a2[j] += g * (xr[j] - m[j]);
    }
  }
  for (int64_t j = 0; j < kLanes; ++j) {
    p1[c0 + j] += a[j];
    p2[c0 + j] += a2[j];
  }
}

class CpuBatchNorm final : public BatchNormOp {
 public:
  CpuBatchNorm(const BatchNormShape& s, BatchNormReduce reduce, void* ctx)
      : s_(s),
        nchw_(s.layout == Layout::nchw),
        relu_(s.relu),
        channels_(s.c),
        spatial_(s.h * s.w),
        reduce_(reduce),
        ctx_(ctx) {
    const int64_t C = channels_;
    mean_.assign(C, 0.0);
    center_.assign(C, 0.0f);
    acc_.assign(C, 0.0);
    acc2_.assign(C, 0.0);
    chunk_acc_.assign(kChunks * 2 * C, 0.0);
    block_acc_.assign(kChunks * 2 * C, 0.0);
    chunk_part_.assign(kChunks * 2 * C, 0.0f);
    inv_std_.assign(C, 0.0f);
    scale_.assign(C, 0.0f);
    shift_.assign(C, 0.0f);
    konst_.assign(C, 0.0f);
    da_.assign(C, 0.0f);
    db_.assign(C, 0.0f);
    reduced_.assign(2 * C + 1, 0.0f);
  }

  void forward_training(int64_t n, const float* x, float* y, const float* gamma, const float* beta, float* rmean,
                        float* rvar) override {
    statistics(n, x, gamma, beta, rmean, rvar);
    relu_ ? apply<true, false>(x, nullptr, y, n) : apply<false, false>(x, nullptr, y, n);
  }

  bool has_residual_relu() const override { return !relu_; }
  bool forward_training_residual_relu(int64_t n, const float* x, const float* r, float* y, const float* gamma,
                                      const float* beta, float* rmean, float* rvar) override {
    if (relu_) return false;
    statistics(n, x, gamma, beta, rmean, rvar);
    apply<true, true>(x, r, y, n);
    return true;
  }

  bool accepts_moments() const override { return s_.layout == Layout::nhwc; }
  void use_moments(const ChannelMoments* m) override { given_ = accepts_moments() ? m : nullptr; }

  // The batch statistics of x: mean_, inv_std_, the output map scale_/shift_, the running statistics.
  void statistics(int64_t n, const float* x, const float* gamma, const float* beta, float* rmean, float* rvar) {
    const int64_t C = channels_;
    const double count = given_ ? given_moments() : nchw_ || reduce_ ? two_pass_moments(x, n) : moments(x, n);
    count_ = count;
    const double m = s_.momentum, unbias = count > 1 ? count / (count - 1) : 1.0;
    for (int64_t c = 0; c < C; ++c) {
      const double var = acc_[c] / count;
      const double inv = 1.0 / std::sqrt(var + s_.epsilon);
      inv_std_[c] = static_cast<float>(inv);
      scale_[c] = static_cast<float>(gamma[c] * inv);
      shift_[c] = static_cast<float>(beta[c] - mean_[c] * gamma[c] * inv);
      rmean[c] = static_cast<float>(m * rmean[c] + (1 - m) * mean_[c]);
      rvar[c] = static_cast<float>(m * rvar[c] + (1 - m) * var * unbias);
    }
  }

  void forward_inference(int64_t n, const float* x, float* y, const float* gamma, const float* beta,
                         const float* rmean, const float* rvar) override {
    batchnorm_inference_affine(channels_, s_.epsilon, gamma, beta, rmean, rvar, scale_.data(), shift_.data());
    relu_ ? apply<true, false>(x, nullptr, y, n) : apply<false, false>(x, nullptr, y, n);
  }

  void backward(int64_t n, const float* x, const float* dy, float* dx, const float* gamma, float* dgamma,
                float* dbeta) override {
    const int64_t C = channels_;
    // dbeta = sum(dy) in acc_; sum(dy * (x - mean)) in acc2_, times inv_std (dgamma) once reduced.
    relu_ ? dot_sums<true>(x, dy, n) : dot_sums<false>(x, dy, n);
    for (int64_t c = 0; c < C; ++c) {
      dgamma[c] = static_cast<float>(acc2_[c] * inv_std_[c]);
      dbeta[c] = static_cast<float>(acc_[c]);
    }
    if (!dx) return;
    if (reduce_) {  // backend/batchnorm.h's format: sum dy, then sum dy * (x - mean) before 1/std
      float* r = reduced_.data();
      for (int64_t c = 0; c < C; ++c) {
        r[c] = static_cast<float>(acc_[c]);
        r[C + c] = static_cast<float>(acc2_[c]);
      }
      reduce_(ctx_, r, 2 * C);
      for (int64_t c = 0; c < C; ++c) {
        acc_[c] = r[c];
        acc2_[c] = r[C + c];
      }
    }
    for (int64_t c = 0; c < C; ++c) acc2_[c] *= inv_std_[c];
    // dx = gamma*inv_std * (dy - dbeta/m - xn * dgamma/m), as a per-channel a*dy + b*x + k (dy masked with
    // the ReLU, whose mask needs the forward's scale and shift).
    float* a = da_.data();
    float* b = db_.data();
    float* k = konst_.data();
    for (int64_t ch = 0; ch < C; ++ch) {
      const double g = gamma[ch] * static_cast<double>(inv_std_[ch]);
      const double t = acc2_[ch] / count_ * inv_std_[ch];  // dgamma / m, in units of x
      a[ch] = static_cast<float>(g);
      b[ch] = static_cast<float>(-g * t);
      k[ch] = static_cast<float>(-g * (acc_[ch] / count_) + g * t * mean_[ch]);
    }
    relu_ ? affine2<true>(dy, x, dx, n) : affine2<false>(dy, x, dx, n);
  }

 private:
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

  // mean_ and acc_ from the moments use_moments() gave (then forgotten); returns their count. Synchronised, they
  // are this rank's, and the ranks exchange what two_pass_moments sends (backend/batchnorm.h's wire format): the
  // sums of x and the count, then the squared deviations around the global mean, m2 + count (mean - global)^2.
  double given_moments() {
    const ChannelMoments* m = given_;
    given_ = nullptr;
    const int64_t C = channels_;
    std::copy_n(m->mean.data(), C, mean_.data());
    std::copy_n(m->m2.data(), C, acc_.data());
    if (!reduce_) return m->count;
    for (int64_t c = 0; c < C; ++c) acc_[c] = m->mean[c] * m->count;
    const double count = allreduce_first(acc_.data(), m->count);
    for (int64_t c = 0; c < C; ++c) {
      mean_[c] = acc_[c] / count;
      const double d = m->mean[c] - mean_[c];
      acc_[c] = m->m2[c] + m->count * d * d;
    }
    allreduce_second(acc_.data());
    return count;
  }
  void sums(const float* x, int64_t n, const double* center, double* acc);
  double moments(const float* x, int64_t n);
  // mean_ and acc_ (the sum of squared deviations) in two passes over x, reduced over the ranks when
  // synchronised (backend/batchnorm.h's wire format); returns the (global) count.
  double two_pass_moments(const float* x, int64_t n) {
    const int64_t C = channels_;
    sums(x, n, nullptr, acc_.data());  // pass 1: the mean
    double count = static_cast<double>(n * spatial_);
    if (reduce_) count = allreduce_first(acc_.data(), count);
    for (int64_t c = 0; c < C; ++c) mean_[c] = acc_[c] / count;
    sums(x, n, mean_.data(), acc_.data());  // pass 2: around the mean (no cancellation of E[x^2] - E[x]^2)
    if (reduce_) allreduce_second(acc_.data());
    return count;
  }
  template <bool kRelu>
  void dot_sums(const float* x, const float* dy, int64_t n);
  template <bool kRelu, bool kResidual>
  void apply(const float* x, const float* r, float* y, int64_t n) const;
  template <bool kRelu>
  void affine2(const float* dy, const float* x, float* out, int64_t n) const;

  // The forward passes' reductions in backend/batchnorm.h's format (which the GPU's kernels write too, so
  // a GPU rank beside CPU ranks adds like with like). First: the C sums of x and this rank's count (as
  // floats, zeros between them); returns the global count. Second: the C sums of squared deviations.
  double allreduce_first(double* acc, double count) {
    const int64_t C = channels_;
    float* r = reduced_.data();
    for (int64_t c = 0; c < C; ++c) {
      r[c] = static_cast<float>(acc[c]);
      r[C + c] = 0.0f;
    }
    r[2 * C] = static_cast<float>(count);
    reduce_(ctx_, r, 2 * C + 1);
    for (int64_t c = 0; c < C; ++c) acc[c] = r[c];
    return r[2 * C];
  }
  void allreduce_second(double* acc) {
    const int64_t C = channels_;
    float* r = reduced_.data();
    for (int64_t c = 0; c < C; ++c) {
      r[c] = 0.0f;
      r[C + c] = static_cast<float>(acc[c]);
    }
    reduce_(ctx_, r, 2 * C);
    for (int64_t c = 0; c < C; ++c) acc[c] = r[C + c];
  }

  BatchNormShape s_;
  bool nchw_;  // NCHW planes; otherwise rows of C values (NHWC, flat)
  bool relu_;  // the fused ReLU (BatchNormShape::relu)
  int64_t channels_, spatial_;
  BatchNormReduce reduce_;
  void* ctx_;
  double count_ = 1.0;  // m of the last forward_training
  const ChannelMoments* given_ = nullptr;  // use_moments(): the next forward's statistics
  std::vector<double> mean_, acc_, acc2_;
  std::vector<double> chunk_acc_;  // kChunks x 2C: per-chunk partial sums (NHWC statistics)
  std::vector<double> block_acc_;  // kChunks x 2C: per-chunk mean and m2 of one block of rows (moments())
  std::vector<float> chunk_part_;  // kChunks x 2C: per-chunk float partials of one block of rows
  std::vector<float> inv_std_;
  std::vector<float> scale_, shift_;   // the forward's y = x * scale + shift, kept for the ReLU's mask
  std::vector<float> da_, db_, konst_;  // the backward's dx = da * dy + db * x + konst
  std::vector<float> center_;   // C: the float center of the NHWC sums (the mean, as float)
  std::vector<float> reduced_;  // 2C + 1: what reduce_ sums over the ranks
};

// Rows of C values, unsynchronised: mean_ and acc_ (the sum of squared deviations) in one pass over x -- each
// block of kBlock rows is read twice while it sits in L1 (its mean, then its deviations), and blocks are merged
// in double in a fixed order (merge_moments), as robust as two passes over the whole batch. Returns the count.
double CpuBatchNorm::moments(const float* x, int64_t n) {
  const int64_t C = channels_, rows = n * spatial_, groups = C / kLanes * kLanes;
  const bool par = n * C * spatial_ > kParallelFloats;
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
  for (int64_t k = 0; k < kChunks; ++k) {
    double* cmean = chunk_acc_.data() + k * 2 * C;
    double* bmean = block_acc_.data() + k * 2 * C;
    for (int64_t c = 0; c < 2 * C; ++c) cmean[c] = 0.0;
    int64_t c0, c1;
    chunk_rows(rows, k, &c0, &c1);
    for (int64_t r0 = c0; r0 < c1; r0 += kBlock) {
      const int64_t r1 = std::min(c1, r0 + kBlock);
      for (int64_t g = 0; g < groups; g += kLanes) block_moments16(x, C, r0, r1, g, bmean, bmean + C);
      block_moments_tail(x, C, r0, r1, groups, bmean, bmean + C);
      merge_moments(C, static_cast<double>(r0 - c0), cmean, cmean + C, static_cast<double>(r1 - r0), bmean, bmean + C);
    }
  }
  for (int64_t c = 0; c < C; ++c) mean_[c] = acc_[c] = 0.0;
  for (int64_t k = 0, seen = 0; k < kChunks; ++k) {
    int64_t c0, c1;
    chunk_rows(rows, k, &c0, &c1);
    const double* chunk = chunk_acc_.data() + k * 2 * C;
    merge_moments(C, static_cast<double>(seen), mean_.data(), acc_.data(), static_cast<double>(c1 - c0), chunk,
                  chunk + C);
    seen += c1 - c0;
  }
  return static_cast<double>(rows);
}

// acc[c] = sum over the batch of x (center == null) or of (x - center[c])^2.
void CpuBatchNorm::sums(const float* x, int64_t n, const double* center, double* acc) {
  const int64_t C = channels_, S = spatial_;
  const bool par = n * C * S > kParallelFloats;
  if (nchw_) {
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
  const int64_t rows = n * S, groups = C / kLanes * kLanes;
  if (center)
    for (int64_t c = 0; c < C; ++c) center_[c] = static_cast<float>(center[c]);
  const float* mu = center_.data();
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
      for (int64_t g = 0; g < groups; g += kLanes) {
        if (center) sums16<true>(x, C, r0, r1, g, mu, part);
        else sums16<false>(x, C, r0, r1, g, mu, part);
      }
      for (int64_t r = r0; r < r1; ++r) {  // the channels past the last group of 16
        const float* row = x + r * C;
        for (int64_t c = groups; c < C; ++c) {
          const float d = row[c] - (center ? mu[c] : 0.0f);
          part[c] += center ? d * d : row[c];
        }
      }
      for (int64_t c = 0; c < C; ++c) ca[c] += part[c];
    }
  }
  for (int64_t c = 0; c < C; ++c) acc[c] = 0.0;
  for (int64_t k = 0; k < kChunks; ++k)
    for (int64_t c = 0; c < C; ++c) acc[c] += chunk_acc_[k * 2 * C + c];
}

// acc_[c] = sum(g), acc2_[c] = sum(g * (x - mean)), g = dy (kRelu: masked by the ReLU, masked()).
template <bool kRelu>
void CpuBatchNorm::dot_sums(const float* x, const float* dy, int64_t n) {
  const int64_t C = channels_, S = spatial_;
  const bool par = n * C * S > kParallelFloats;
  if (nchw_) {
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
    for (int64_t c = 0; c < C; ++c) {
      double a = 0.0, a2 = 0.0;
      const float mu = static_cast<float>(mean_[c]), ra = scale_[c], rs = shift_[c];
      for (int64_t b = 0; b < n; ++b) {
        const float* xr = x + (b * C + c) * S;
        const float* gr = dy + (b * C + c) * S;
        float s = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s, s2)
        for (int64_t i = 0; i < S; ++i) {
          const float g = masked<kRelu>(gr[i], xr[i], ra, rs);
          s += g;
          s2 += g * (xr[i] - mu);
        }
        a += s;
        a2 += s2;
      }
      acc_[c] = a;
      acc2_[c] = a2;
    }
    return;
  }
  const int64_t rows = n * S, groups = C / kLanes * kLanes;
  for (int64_t c = 0; c < C; ++c) center_[c] = static_cast<float>(mean_[c]);
  const float* mu = center_.data();
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
      for (int64_t g = 0; g < groups; g += kLanes)
        dot_sums16<kRelu>(x, dy, C, r0, r1, g, mu, scale_.data(), shift_.data(), p1, p2);
      for (int64_t r = r0; r < r1; ++r) {  // the channels past the last group of 16
        const float* xr = x + r * C;
        const float* gr = dy + r * C;
        for (int64_t c = groups; c < C; ++c) {
          const float g = masked<kRelu>(gr[c], xr[c], scale_[c], shift_[c]);
          p1[c] += g;
          p2[c] += g * (xr[c] - mu[c]);
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

// y = x * scale_[c] + shift_[c] (kResidual: + r), clamped at 0 when kRelu. The normalised value is rounded
// before r is added, as the unfused layers round it (cpu::add_relu_into adds r to the stored y).
template <bool kRelu, bool kResidual>
void CpuBatchNorm::apply(const float* x, const float* r, float* y, int64_t n) const {
  const int64_t C = channels_, S = spatial_;
  const float* scale = scale_.data();
  const float* shift = shift_.data();
  const bool par = n * C * S > kParallelFloats;
  if (nchw_) {
#pragma omp parallel for collapse(2) schedule(static) num_threads(cpu::threads()) if (par)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t o = (b * C + c) * S;
        const float a = scale[c], s = shift[c];
#pragma omp simd
        for (int64_t i = 0; i < S; ++i) {
          float v = x[o + i] * a + s;
          if constexpr (kResidual) v += r[o + i];
          y[o + i] = clamp<kRelu>(v);
        }
      }
    return;
  }
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
  for (int64_t row = 0; row < n * S; ++row) {
    const int64_t o = row * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      float v = x[o + c] * scale[c] + shift[c];
      if constexpr (kResidual) v += r[o + c];
      y[o + c] = clamp<kRelu>(v);
    }
  }
}

// out = a[c] * g + b[c] * x + k[c] with da_, db_, konst_; g = dy (kRelu: masked by the ReLU, masked()).
template <bool kRelu>
void CpuBatchNorm::affine2(const float* dy, const float* x, float* out, int64_t n) const {
  const int64_t C = channels_, S = spatial_;
  const float *a = da_.data(), *b = db_.data(), *k = konst_.data();
  const float *ra = scale_.data(), *rs = shift_.data();
  const bool par = n * C * S > kParallelFloats;
  if (nchw_) {
#pragma omp parallel for collapse(2) schedule(static) num_threads(cpu::threads()) if (par)
    for (int64_t bb = 0; bb < n; ++bb)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t o = (bb * C + c) * S;
        const float ac = a[c], bc = b[c], kc = k[c], rac = ra[c], rsc = rs[c];
#pragma omp simd
        for (int64_t i = 0; i < S; ++i) out[o + i] = ac * masked<kRelu>(dy[o + i], x[o + i], rac, rsc) + bc * x[o + i] + kc;
      }
    return;
  }
#pragma omp parallel for schedule(static) num_threads(cpu::threads()) if (par)
  for (int64_t r = 0; r < n * S; ++r) {
    const int64_t o = r * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) out[o + c] = a[c] * masked<kRelu>(dy[o + c], x[o + c], ra[c], rs[c]) + b[c] * x[o + c] + k[c];
  }
}

}  // namespace

std::unique_ptr<BatchNormOp> make_batchnorm(const BatchNormShape& shape, BatchNormReduce reduce, void* reduce_ctx) {
  DTNN_CHECK(shape.c > 0 && shape.h > 0 && shape.w > 0, "BatchNormalization: bad shape (", shape.c, ", ", shape.h,
             ", ", shape.w, ")");
  return std::make_unique<CpuBatchNorm>(shape, reduce, reduce_ctx);
}

void batchnorm_inference_affine(int64_t c, double epsilon, const float* gamma, const float* beta,
                                const float* running_mean, const float* running_var, float* scale, float* shift) {
  for (int64_t i = 0; i < c; ++i) {
    const double inv = 1.0 / std::sqrt(static_cast<double>(running_var[i]) + epsilon);
    scale[i] = static_cast<float>(gamma[i] * inv);
    shift[i] = static_cast<float>(beta[i] - running_mean[i] * gamma[i] * inv);
  }
}

}  // namespace dtnn::cpu
