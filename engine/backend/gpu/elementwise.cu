// Elementwise and small reduction kernels: activations, softmax, dropout, bias rows, weight transposes.
#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {
namespace {

constexpr int kThreads = 256;

#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

__global__ void fill_kernel(float* x, float v, int64_t n) { GRID_STRIDE(i, n) x[i] = v; }

// The memory-bound passes of every residual network (ReLU, the block additions) move 16 bytes per load
// and store when their arrays allow it (aligned, length a multiple of 4): float4 loads get closer to the
// GPU's memory bandwidth than scalar ones. relu(x) = x > 0 ? x : 0 (a NaN gives 0, as on the CPU). The
// kernels run in place too (relu_forward(y, y), relu_backward(y, dy, dy)), so plain loads, not __ldg.
__device__ inline float relu1(float x) { return x > 0.0f ? x : 0.0f; }
__device__ inline float relu_grad1(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

__global__ void add_kernel(float* d, const float* s, int64_t n) { GRID_STRIDE(i, n) d[i] += s[i]; }
__global__ void add_v4(float4* d, const float4* s, int64_t n4) {
  GRID_STRIDE(i, n4) {
    float4 a = d[i];
    const float4 b = s[i];
    a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
    d[i] = a;
  }
}
__global__ void add_relu_kernel(float* d, const float* s, int64_t n) { GRID_STRIDE(i, n) d[i] = relu1(d[i] + s[i]); }
__global__ void add_relu_v4(float4* d, const float4* s, int64_t n4) {
  GRID_STRIDE(i, n4) {
    const float4 a = d[i], b = s[i];
    d[i] = make_float4(relu1(a.x + b.x), relu1(a.y + b.y), relu1(a.z + b.z), relu1(a.w + b.w));
  }
}
__global__ void relu_f(const float* x, float* y, int64_t n) { GRID_STRIDE(i, n) y[i] = relu1(x[i]); }
__global__ void relu_f_v4(const float4* x, float4* y, int64_t n4) {
  GRID_STRIDE(i, n4) {
    const float4 v = x[i];
    y[i] = make_float4(relu1(v.x), relu1(v.y), relu1(v.z), relu1(v.w));
  }
}
__global__ void relu_b(const float* y, const float* dy, float* dx, int64_t n) {
  GRID_STRIDE(i, n) dx[i] = relu_grad1(y[i], dy[i]);
}
__global__ void relu_b_v4(const float4* y, const float4* dy, float4* dx, int64_t n4) {
  GRID_STRIDE(i, n4) {
    const float4 a = y[i], g = dy[i];
    dx[i] = make_float4(relu_grad1(a.x, g.x), relu_grad1(a.y, g.y), relu_grad1(a.z, g.z), relu_grad1(a.w, g.w));
  }
}

// True when every pointer is 16-byte aligned and n a multiple of 4: the float4 kernels apply.
bool vectorizable(int64_t n, const void* a, const void* b, const void* c = nullptr) {
  const auto aligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; };
  return n % 4 == 0 && aligned(a) && aligned(b) && aligned(c);
}
__global__ void sigmoid_f(const float* x, float* y, int64_t n) { GRID_STRIDE(i, n) y[i] = 1.0f / (1.0f + expf(-x[i])); }
__global__ void sigmoid_b(const float* y, const float* dy, float* dx, int64_t n) {
  GRID_STRIDE(i, n) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}
__global__ void tanh_f(const float* x, float* y, int64_t n) { GRID_STRIDE(i, n) y[i] = tanhf(x[i]); }
__global__ void tanh_b(const float* y, const float* dy, float* dx, int64_t n) {
  GRID_STRIDE(i, n) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}
__global__ void mul_kernel(const float* a, const float* b, float* y, int64_t n) { GRID_STRIDE(i, n) y[i] = a[i] * b[i]; }

// splitmix64 of (seed, index): a counter-based generator, so any element's draw is independent of the
// launch configuration.
__device__ inline float uniform01(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // 24 bits: [0, 1)
}

__global__ void dropout_f(const float* x, float* y, float* mask, int64_t n, float keep, uint64_t seed,
                          uint64_t offset) {
  const float scale = 1.0f / keep;
  GRID_STRIDE(i, n) {
    const float m = uniform01(seed, offset + i) < keep ? scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

__global__ void uniform_kernel(float* x, int64_t n, float lo, float hi, uint64_t seed) {
  GRID_STRIDE(i, n) x[i] = lo + (hi - lo) * uniform01(seed, i);
}

__global__ void broadcast_rows_kernel(float* y, const float* b, int64_t rows, int64_t k) {
  GRID_STRIDE(i, rows * k) y[i] = b[i % k];
}

// One thread per column, rows summed in order (deterministic); columns are contiguous across threads.
__global__ void sum_rows_kernel(const float* dy, float* db, int64_t rows, int64_t k) {
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= k) return;
  float s = 0.0f;
  for (int64_t r = 0; r < rows; ++r) s += dy[r * k + j];
  db[j] = s;
}

// Softmax over rows of k: one warp per row.
__global__ void softmax_f(const float* x, float* y, int64_t rows, int64_t k) {
  const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* z = x + row * k;
  float m = -INFINITY;
  for (int64_t j = lane; j < k; j += 32) m = fmaxf(m, z[j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.0f;
  for (int64_t j = lane; j < k; j += 32) s += expf(z[j] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = 1.0f / s;
  for (int64_t j = lane; j < k; j += 32) y[row * k + j] = expf(z[j] - m) * inv;
}

__global__ void softmax_b(const float* y, const float* dy, float* dx, int64_t rows, int64_t k) {
  const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float dot = 0.0f;
  for (int64_t j = lane; j < k; j += 32) dot += dy[row * k + j] * y[row * k + j];
  for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
  for (int64_t j = lane; j < k; j += 32) dx[row * k + j] = y[row * k + j] * (dy[row * k + j] - dot);
}

// (C, RS, K) <-> (K, RS, C): element (c, t, k).
__global__ void crsk_kernel(const float* src, float* dst, int64_t c, int64_t rs, int64_t k, bool to_krsc) {
  GRID_STRIDE(i, c * rs * k) {
    const int64_t kk = i % k, t = (i / k) % rs, cc = i / (k * rs);  // i indexes (C, RS, K)
    const int64_t j = (kk * rs + t) * c + cc;                          // index in (K, RS, C)
    if (to_krsc)
      dst[j] = src[i];
    else
      dst[i] = src[j];
  }
}

__global__ void accumulate_kernel(float* d, const float* s, int64_t n) { GRID_STRIDE(i, n) d[i] += s[i]; }
__global__ void set_kernel(float* d, float v) { *d = v; }

}  // namespace

#define LAUNCH(kernel, n, ...)                                                      \
  do {                                                                              \
    if ((n) > 0) {                                                                  \
      kernel<<<blocks_for(n, kThreads), kThreads, 0, stream()>>>(__VA_ARGS__);      \
      DTNN_LAUNCH_CHECK();                                                          \
    }                                                                               \
  } while (0)

void fill(float* x, float value, int64_t n) { LAUNCH(fill_kernel, n, x, value, n); }
void add_into(float* dst, const float* src, int64_t n) {
  if (vectorizable(n, dst, src))
    LAUNCH(add_v4, n / 4, reinterpret_cast<float4*>(dst), reinterpret_cast<const float4*>(src), n / 4);
  else
    LAUNCH(add_kernel, n, dst, src, n);
}
void add_relu_into(float* dst, const float* src, int64_t n) {
  if (vectorizable(n, dst, src))
    LAUNCH(add_relu_v4, n / 4, reinterpret_cast<float4*>(dst), reinterpret_cast<const float4*>(src), n / 4);
  else
    LAUNCH(add_relu_kernel, n, dst, src, n);
}
void relu_forward(const float* x, float* y, int64_t n) {
  if (vectorizable(n, x, y))
    LAUNCH(relu_f_v4, n / 4, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n / 4);
  else
    LAUNCH(relu_f, n, x, y, n);
}
void relu_backward(const float* y, const float* dy, float* dx, int64_t n) {
  if (vectorizable(n, y, dy, dx))
    LAUNCH(relu_b_v4, n / 4, reinterpret_cast<const float4*>(y), reinterpret_cast<const float4*>(dy),
           reinterpret_cast<float4*>(dx), n / 4);
  else
    LAUNCH(relu_b, n, y, dy, dx, n);
}
void sigmoid_forward(const float* x, float* y, int64_t n) { LAUNCH(sigmoid_f, n, x, y, n); }
void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n) { LAUNCH(sigmoid_b, n, y, dy, dx, n); }
void tanh_forward(const float* x, float* y, int64_t n) { LAUNCH(tanh_f, n, x, y, n); }
void tanh_backward(const float* y, const float* dy, float* dx, int64_t n) { LAUNCH(tanh_b, n, y, dy, dx, n); }
void multiply(const float* a, const float* b, float* y, int64_t n) { LAUNCH(mul_kernel, n, a, b, y, n); }
void dropout_forward(const float* x, float* y, float* mask, int64_t n, float keep, uint64_t seed, uint64_t offset) {
  LAUNCH(dropout_f, n, x, y, mask, n, keep, seed, offset);
}
void fill_uniform(float* x, int64_t n, float lo, float hi, uint64_t seed) {
  LAUNCH(uniform_kernel, n, x, n, lo, hi, seed);
}
void broadcast_rows(float* y, const float* bias, int64_t rows, int64_t k) {
  LAUNCH(broadcast_rows_kernel, rows * k, y, bias, rows, k);
}
void sum_rows(const float* dy, float* db, int64_t rows, int64_t k) {
  if (k <= 0) return;
  sum_rows_kernel<<<blocks_for(k, 128), 128, 0, stream()>>>(dy, db, rows, k);
  DTNN_LAUNCH_CHECK();
}
void crsk_krsc(const float* src, float* dst, int64_t c, int64_t rs, int64_t k, bool to_krsc) {
  LAUNCH(crsk_kernel, c * rs * k, src, dst, c, rs, k, to_krsc);
}
void accumulate(float* dst, const float* src, int64_t n) { LAUNCH(accumulate_kernel, n, dst, src, n); }
void set_value(float* dst, float value) {
  set_kernel<<<1, 1, 0, stream()>>>(dst, value);
  DTNN_LAUNCH_CHECK();
}

void softmax_forward(const float* x, float* y, int64_t rows, int64_t k) {
  if (rows <= 0) return;
  softmax_f<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream()>>>(x, y, rows, k);
  DTNN_LAUNCH_CHECK();
}
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k) {
  if (rows <= 0) return;
  softmax_b<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream()>>>(y, dy, dx, rows, k);
  DTNN_LAUNCH_CHECK();
}

}  // namespace dtnn::gpu
