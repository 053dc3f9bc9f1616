#include "backend/cpu/blas.h"

#include <cblas.h>
#include <omp.h>
#include <xmmintrin.h>

#include "core/error.h"

namespace dtnn::cpu {

namespace {
int g_threads = 1;
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void set_threads(int threads) {
  DTNN_CHECK(threads >= 1 && threads <= kMaxThreads, "--threads must be 1 to ", kMaxThreads, " (got ", threads, ")");
  g_threads = threads;
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);
}

int threads() { return g_threads; }

void set_flush_denormals(bool on) {
  constexpr unsigned kFtzDaz = 0x8040u;  // MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)
  const auto apply = [on] { _mm_setcsr(on ? (_mm_getcsr() | kFtzDaz) : (_mm_getcsr() & ~kFtzDaz)); };
  apply();
#pragma omp parallel num_threads(g_threads)
  apply();
}

std::string blas_version() {
  const char* cfg = openblas_get_config();
  return cfg ? cfg : "OpenBLAS (unknown config)";
}

}  // namespace dtnn::cpu
