// AVX2/FMA single-threaded SGEMM kernels for the very skinny shapes of im2row convolutions, where one
// dimension ("n" below: output channels, or the filter's K) is tiny and OpenBLAS loses most of its time
// packing both operands and clearing C. All matrices are row-major float32 with leading dimensions
// lda/ldb/ldc (>= the row length); nothing outside the m/n/k extents is read or written, including the
// padding between rows and past the last row.
//
//   skinny_gemm_nn  C[m x n] = A[m x k] . B[k x n]          lda >= k, ldb >= n, ldc >= n   (beta = 0)
//                   (conv forward: Y = rows . W)
//   skinny_gemm_nt  C[m x k] = A[m x n] . B[k x n]^T        lda >= n, ldb >= n, ldc >= k   (beta = 0)
//                   (conv backward_data: drows = dY . W^T; n is the inner dimension)
//   skinny_gemm_tn  C[k x n] = beta*C + A[m x k]^T . B[m x n]  lda >= k, ldb >= n, ldc >= n
//                   (conv backward_filter: dW (+)= rows^T . dY; long reduction over m)
//
// Limits: the kernels are built for 1 <= n <= 16 (skinny_supported(n)); larger n still gives correct
// results through a plain scalar loop, but slowly, so callers should use BLAS there. m >= 0 and k >= 0
// are arbitrary (m = 0 or k = 0 give the mathematically empty product: nn/nt write nothing for m = 0,
// nn writes zeros for k = 0, tn writes beta*C, i.e. zeros for beta = 0). beta = 0 never reads C, so C
// may hold NaN/garbage. No heap allocation: operands are repacked into fixed stack buffers (<= 32 KiB).
// Thread-safe (no shared state); single-threaded by design (dtnn calls it from the main thread).
#pragma once

#include <cstdint>

namespace dtnn::cpu {

// True when the skinny kernels are fast for n (the small dimension): 1 <= n <= 16.
bool skinny_supported(int64_t n);

// C[m x n] = A[m x k] . B[k x n]                 (n small, k any)
void skinny_gemm_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc);

// C[m x k] = A[m x n] . B[k x n]^T               (n small is the inner dimension, k any)
void skinny_gemm_nt(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc);

// C[k x n] = beta * C + A[m x k]^T . B[m x n]    (n small, reduction over m)
void skinny_gemm_tn(int64_t k, int64_t n, int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float beta, float* c, int64_t ldc);

}  // namespace dtnn::cpu
