// The CPU BLAS and threading entry points dtnn uses (OpenBLAS underneath).
//
// All matrices are row-major. Threads: set_threads(T) sets OpenBLAS's and OpenMP's thread counts together;
// dtnn calls BLAS only from the main thread, and OpenMP loops never contain BLAS calls.
#pragma once

#include <cstdint>
#include <string>

namespace dtnn::cpu {

// C[m x n] = alpha * op(A) * op(B) + beta * C, row-major; op(A) is m x k, op(B) is k x n.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The most threads a rank runs (--threads and every default it resolves to): a count past it is refused rather
// than handed to libgomp, which crashes creating tens of thousands of threads.
inline constexpr int kMaxThreads = 1024;
// 1 <= threads <= kMaxThreads, else dtnn::Error.
void set_threads(int threads);
int threads();
// Denormal floats flushed to zero (MXCSR FTZ: results; DAZ: operands) on the calling thread and every
// OpenMP worker (threads created later inherit the caller's setting), or strict IEEE again. Why: an
// optimizer's state decays into the denormal range (Adam's v = beta2 * v + ...), and on Intel CPUs every
// denormal operand costs a microcode assist: simplecnn/Adam slowed by a third by its 3rd epoch. OpenBLAS's
// own worker threads, created before, keep their setting (GEMMs rarely meet denormals).
void set_flush_denormals(bool on);
std::string blas_version();  // e.g. "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"

}  // namespace dtnn::cpu
