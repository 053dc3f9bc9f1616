// Elementwise kernels on the CPU: the same calls as the gpu:: ones in backend/gpu_ops.h ("elementwise"),
// with host pointers, so a layer picks one function for its device and calls it with identical arguments.
//
// n floats each; y may alias x and dx may alias dy (layers run them in place). Large arrays are split
// over OpenMP threads elementwise, so results do not depend on the thread count.
#pragma once

#include <cstdint>

namespace dtnn::cpu {

void relu_forward(const float* x, float* y, int64_t n);                     // y = max(x, 0); NaN gives 0
void relu_backward(const float* y, const float* dy, float* dx, int64_t n);  // dx = y > 0 ? dy : 0
void sigmoid_forward(const float* x, float* y, int64_t n);
void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n);  // dx = dy * y * (1 - y)
void tanh_forward(const float* x, float* y, int64_t n);
void tanh_backward(const float* y, const float* dy, float* dx, int64_t n);     // dx = dy * (1 - y^2)
// Row-wise over rows x k (N, classes): y = exp(x - max) / sum, and dx = y * (dy - sum(dy * y)).
void softmax_forward(const float* x, float* y, int64_t rows, int64_t k);
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k);
void add_into(float* dst, const float* src, int64_t n);       // dst += src
// FC's bias: every row of y (rows x k) set to bias; db[j] = sum over rows of dy[i][j] (rows in order).
void broadcast_rows(float* y, const float* bias, int64_t rows, int64_t k);
void sum_rows(const float* dy, float* db, int64_t rows, int64_t k);
// dst = relu(dst + src): the sum is rounded first, then clamped (the same floats as add_into + relu).
void add_relu_into(float* dst, const float* src, int64_t n);
void multiply(const float* a, const float* b, float* y, int64_t n);  // y = a * b

}  // namespace dtnn::cpu
