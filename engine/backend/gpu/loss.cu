// Losses and metrics on the GPU (formulas of train/losses.h), and the optimizer updates.
// loss_and_metrics: one warp per row writes the row's loss and metric values (and the gradient row);
// a single block then sums the rows in a fixed order, so the sums are deterministic.
#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {
namespace {

constexpr int kMaxValues = kLossScratchPerRow;  // loss + up to 8 metrics
// MetricKind codes (train/losses.h order).
enum : int { kAccuracy = 0, kCatMse, kCatMae, kCatHinge, kRegMse, kRegMae };
struct Metrics {
  int code[8];
  int count;
};

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// First index of the maximum across the warp's strided scan.
__device__ inline int64_t warp_argmax(const float* v, int64_t k, int lane) {
  float best = -INFINITY;
  int64_t where = k;
  for (int64_t j = lane; j < k; j += 32)
    if (where == k || v[j] > best) {  // ascending j: strict '>' keeps this lane's first maximum
      best = v[j];
      where = j;
    }
  for (int o = 16; o > 0; o /= 2) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t ow = __shfl_xor_sync(0xffffffffu, where, o);
    if (ob > best || (ob == best && ow < where)) {
      best = ob;
      where = ow;
    }
  }
  return where;
}

__global__ void rows_kernel(int loss, const float* z, const float* p, const float* y, int64_t n, int64_t k,
                            float inv_global, float* grad, Metrics metrics, float* rows) {
  const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  const float* yb = y + row * k;
  const float* pb = p + row * k;
  float* out = rows + row * kMaxValues;
  float loss_v = 0.0f;
  if (z) {  // softmax + categorical cross entropy from the logits
    const float* zb = z + row * k;
    float m = -INFINITY;
    for (int64_t j = lane; j < k; j += 32) m = fmaxf(m, zb[j]);
    m = warp_max(m);
    float s = 0.0f;
    for (int64_t j = lane; j < k; j += 32) s += expf(zb[j] - m);
    const float lse = m + logf(warp_sum(s));
    float l = 0.0f, ysum = 0.0f;
    for (int64_t j = lane; j < k; j += 32) {
      l += yb[j] * (lse - zb[j]);
      ysum += yb[j];
    }
    loss_v = warp_sum(l);
    ysum = warp_sum(ysum);
    if (grad)
      for (int64_t j = lane; j < k; j += 32) grad[row * k + j] = (expf(zb[j] - lse) * ysum - yb[j]) * inv_global;
  } else {
    float l = 0.0f;
    for (int64_t j = lane; j < k; j += 32) {
      const float raw = pb[j];
      const float pc = fminf(fmaxf(raw, 1e-7f), 1.0f - 1e-7f);
      const bool clipped = pc != raw;
      const float t = yb[j];
      float d;
      if (loss == 0) {
        l -= t * logf(pc);
        d = -t / pc;
      } else {
        l -= t * logf(pc) + (1.0f - t) * logf(1.0f - pc);
        d = -t / pc + (1.0f - t) / (1.0f - pc);
      }
      if (grad) grad[row * k + j] = clipped ? 0.0f : d * inv_global;
    }
    loss_v = warp_sum(l);
  }
  if (lane == 0) out[0] = loss_v;
  if (metrics.count == 0) return;
  const int64_t t = warp_argmax(yb, k, lane);
  const float pt = pb[t];
  for (int m = 0; m < metrics.count; ++m) {
    float v = 0.0f;
    switch (metrics.code[m]) {
      case kAccuracy: v = warp_argmax(pb, k, lane) == t ? 100.0f : 0.0f; break;
      case kCatMse: v = (1.0f - pt) * (1.0f - pt); break;
      case kCatMae: v = fabsf(1.0f - pt); break;
      case kCatHinge: {
        float other = -1e30f;
        for (int64_t j = lane; j < k; j += 32)
          if (j != t) other = fmaxf(other, pb[j]);
        other = warp_max(other);
        v = fmaxf(0.0f, other - pt + 1.0f);
        break;
      }
      case kRegMse:
      case kRegMae: {
        float s = 0.0f;
        for (int64_t j = lane; j < k; j += 32) {
          const float d = yb[j] - pb[j];
          s += metrics.code[m] == kRegMse ? d * d : fabsf(d);
        }
        v = warp_sum(s) / static_cast<float>(k);
        break;
      }
    }
    if (lane == 0) out[1 + m] = v;
  }
}

// One block: value v summed over the rows in a fixed tree order (double accumulation per thread).
__global__ void sum_kernel(const float* rows, int64_t n, int values, float* out, bool accumulate) {
  __shared__ double part[256];
  for (int v = 0; v < values; ++v) {
    double s = 0.0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) s += rows[r * kMaxValues + v];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[v] = static_cast<float>(accumulate ? out[v] + part[0] : part[0]);
    __syncthreads();
  }
}

// ---- optimizers ----------------------------------------------------------------------------------------
#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

__global__ void sgd_kernel(float* w, const float* g, float* v, int64_t n, float lr, float mu, float decay,
                           bool nesterov) {
  GRID_STRIDE(i, n) {
    const float vi = mu * v[i] + g[i];
    v[i] = vi;
    w[i] -= nesterov ? lr * (decay * w[i] + g[i] + mu * vi) : lr * (decay * w[i] + vi);
  }
}

__global__ void rmsprop_kernel(float* w, const float* g, float* c, int64_t n, float lr, float rho, float eps,
                               float decay) {
  GRID_STRIDE(i, n) {
    const float ci = rho * c[i] + (1.0f - rho) * g[i] * g[i];
    c[i] = ci;
    w[i] -= lr * (decay * w[i] + g[i] / sqrtf(ci + eps));
  }
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2,
                            float c1, float c2, float eps, float decay, bool nadam) {
  GRID_STRIDE(i, n) {
    const float mi = b1 * m[i] + (1.0f - b1) * g[i];
    const float vi = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    const float num = nadam ? (mi + (1.0f - b1) * g[i]) * c1 : mi * c1;
    w[i] -= lr * (decay * w[i] + num / sqrtf(vi * c2 + eps));
  }
}

}  // namespace

void loss_and_metrics(LossCode loss, const float* logits, const float* p, const float* y, int64_t n, int64_t k,
                      float inv_global, float* grad, const int* metrics, int num_metrics, float* out, bool accumulate,
                      float* scratch) {
  DTNN_CHECK(num_metrics <= 8, "at most 8 metrics on the GPU (got ", num_metrics, ")");
  if (n <= 0) return;
  Metrics m{};
  for (int i = 0; i < num_metrics; ++i) m.code[i] = metrics[i];
  m.count = num_metrics;
  float* rows = scratch;
  rows_kernel<<<static_cast<unsigned>((n + 7) / 8), 256, 0, stream()>>>(static_cast<int>(loss), logits, p, y, n, k,
                                                                        inv_global, grad, m, rows);
  DTNN_LAUNCH_CHECK();
  sum_kernel<<<1, 256, 0, stream()>>>(rows, n, 1 + num_metrics, out, accumulate);
  DTNN_LAUNCH_CHECK();
}

void sgd_update(float* w, const float* g, float* v, int64_t n, float lr, float momentum, float decay, bool nesterov) {
  if (n <= 0) return;
  sgd_kernel<<<blocks_for(n), 256, 0, stream()>>>(w, g, v, n, lr, momentum, decay, nesterov);
  DTNN_LAUNCH_CHECK();
}

void rmsprop_update(float* w, const float* g, float* c, int64_t n, float lr, float rho, float eps, float decay) {
  if (n <= 0) return;
  rmsprop_kernel<<<blocks_for(n), 256, 0, stream()>>>(w, g, c, n, lr, rho, eps, decay);
  DTNN_LAUNCH_CHECK();
}

void adam_update(float* w, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float c1,
                 float c2, float eps, float decay, bool nadam) {
  if (n <= 0) return;
  adam_kernel<<<blocks_for(n), 256, 0, stream()>>>(w, g, m, v, n, lr, beta1, beta2, c1, c2, eps, decay, nadam);
  DTNN_LAUNCH_CHECK();
}

}  // namespace dtnn::gpu
