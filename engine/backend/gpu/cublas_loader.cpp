// cuBLAS, loaded when the GPU backend first calls it rather than when dtnn starts.
//
// libcublas.so needs libcublasLt.so (540 MB), whose loading and static initialisation took ~370 ms of every
// process start on a 2-vCPU Zen 5 -- `dtnn --version`, each `dtnn query`, each CPU training run, each of the
// test programs' hundreds of processes -- though only a GPU run calls cuBLAS, through the six functions below.
// dtnn therefore does not link libcublas: this file defines those six with cuBLAS's own declarations
// (cublas_v2.h; a signature that drifts from the header does not compile), each forwarding to the real one,
// found with dlsym in the library dlopen'ed on the first call: by its soname (the loader's search path: the
// binary's RUNPATH, LD_LIBRARY_PATH), else beside the CUDA runtime this process loaded. A library that cannot
// be loaded is a dtnn::Error naming it and the loader's reason, thrown from that first call.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <link.h>

#include <string>

#include "backend/gpu.h"
#include "core/error.h"

namespace {

#define DTNN_CUBLAS_STR2(x) #x
#define DTNN_CUBLAS_STR(x) DTNN_CUBLAS_STR2(x)
constexpr const char* kSoname = "libcublas.so." DTNN_CUBLAS_STR(CUBLAS_VER_MAJOR);

void* library() {
  static void* const handle = [] {
    void* h = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    std::string why = h ? "" : dlerror();
    Dl_info info{};
    if (!h && dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) && info.dli_fname) {
      const std::string runtime = info.dli_fname;
      const std::string beside = runtime.substr(0, runtime.rfind('/') + 1) + kSoname;
      h = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) why += "; " + std::string(dlerror());
    }
    if (!h) dtnn::fail("cannot load ", kSoname, " (cuBLAS, the GPU backend's GEMMs): ", why);
    return h;
  }();
  return handle;
}

template <typename F>
F* real(const char* name) {
  void* s = dlsym(library(), name);
  if (!s) dtnn::fail(kSoname, " has no function ", name);
  return reinterpret_cast<F*>(s);
}

}  // namespace

std::string dtnn::load_cublas() {
  link_map* map = nullptr;
  if (dlinfo(library(), RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return kSoname;
  return map->l_name;
}

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  static auto* const f = real<decltype(cublasCreate_v2)>("cublasCreate_v2");
  return f(handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  static auto* const f = real<decltype(cublasSetStream_v2)>("cublasSetStream_v2");
  return f(handle, stream);
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  static auto* const f = real<decltype(cublasSetMathMode)>("cublasSetMathMode");
  return f(handle, mode);
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static auto* const f = real<decltype(cublasGetStatusString)>("cublasGetStatusString");
  return f(status);
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                           int m, int n, int k, const float* alpha, const float* A, int lda,
                                           const float* B, int ldb, const float* beta, float* C, int ldc) {
  static auto* const f = real<decltype(cublasSgemm_v2)>("cublasSgemm_v2");
  return f(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                      cublasOperation_t transb, int m, int n, int k,
                                                      const float* alpha, const float* A, int lda,
                                                      long long int strideA, const float* B, int ldb,
                                                      long long int strideB, const float* beta, float* C, int ldc,
                                                      long long int strideC, int batchCount) {
  static auto* const f = real<decltype(cublasSgemmStridedBatched)>("cublasSgemmStridedBatched");
  return f(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
           batchCount);
}

}  // extern "C"
