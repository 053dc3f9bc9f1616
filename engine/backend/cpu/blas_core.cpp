#include "backend/cpu/blas_core.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>

namespace dtnn::cpu {

namespace {

// OpenBLAS's names for the cores its DYNAMIC_ARCH builds detect at AVX2 level or above.
const std::set<std::string> kModernCores = {"Haswell",  "Zen",      "SkylakeX", "Cooperlake", "SapphireRapids",
                                            "Excavator", "Skylake", "Zen2",     "Zen3"};

std::string loaded_core() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

bool has_avx512_skylake() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd");
}

}  // namespace

std::string blas_core_upgrade() {
  const std::string core = loaded_core();
  if (core.empty() || kModernCores.count(core)) return "";
  __builtin_cpu_init();
  if (has_avx512_skylake()) return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

void ensure_blas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("DTNN_BLAS_CORE_SET")) return;
  const char* keep = std::getenv("DTNN_BLAS_CORE");
  if (keep && std::strcmp(keep, "keep") == 0) return;
  const std::string core = blas_core_upgrade();
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  setenv("DTNN_BLAS_CORE_SET", loaded_core().c_str(), 1);  // what OpenBLAS had picked, for the report
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");  // the re-execution failed: run on as loaded, and say so in no report
  unsetenv("DTNN_BLAS_CORE_SET");
}

std::string blas_core_note() {
  const std::string core = loaded_core();
  const char* detected = std::getenv("DTNN_BLAS_CORE_SET");
  if (detected && *detected && std::getenv("OPENBLAS_CORETYPE"))
    return core + " (set by dtnn: OpenBLAS detected " + detected + ")";
  if (std::getenv("OPENBLAS_CORETYPE")) return core + " (OPENBLAS_CORETYPE=" + std::getenv("OPENBLAS_CORETYPE") + ")";
  return core;
}

}  // namespace dtnn::cpu
