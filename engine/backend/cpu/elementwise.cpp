#include "backend/cpu/elementwise.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/blas.h"

namespace dtnn::cpu {

void relu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void sigmoid_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = y[i];
    dx[i] = dy[i] * s * (1.0f - s);
  }
}

void tanh_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

void tanh_backward(const float* y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float t = y[i];
    dx[i] = dy[i] * (1.0f - t * t);
  }
}

void softmax_forward(const float* x, float* y, int64_t rows, int64_t k) {
  for (int64_t b = 0; b < rows; ++b) {
    const float* z = x + b * k;
    float* p = y + b * k;
    float m = z[0];
    for (int64_t j = 1; j < k; ++j) m = std::max(m, z[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) sum += (p[j] = std::exp(z[j] - m));
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < k; ++j) p[j] *= inv;
  }
}

void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k) {
  for (int64_t b = 0; b < rows; ++b) {
    const float* p = y + b * k;
    const float* g = dy + b * k;
    float dot = 0.0f;
    for (int64_t j = 0; j < k; ++j) dot += g[j] * p[j];
    for (int64_t j = 0; j < k; ++j) dx[b * k + j] = p[j] * (g[j] - dot);
  }
}

void add_into(float* dst, const float* src, int64_t n) {
#pragma omp parallel for simd schedule(static) num_threads(cpu::threads()) if (n > (1 << 15))
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

void add_relu_into(float* dst, const float* src, int64_t n) {
#pragma omp parallel for simd schedule(static) num_threads(cpu::threads()) if (n > (1 << 15))
  for (int64_t i = 0; i < n; ++i) {
    const float v = dst[i] + src[i];
    dst[i] = v > 0.0f ? v : 0.0f;
  }
}

void multiply(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void broadcast_rows(float* y, const float* bias, int64_t rows, int64_t k) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < k; ++j) y[i * k + j] = bias[j];
}

void sum_rows(const float* dy, float* db, int64_t rows, int64_t k) {
  for (int64_t j = 0; j < k; ++j) db[j] = 0.0f;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < k; ++j) db[j] += dy[i * k + j];
}

}  // namespace dtnn::cpu
