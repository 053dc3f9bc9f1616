// See environment.h.
#include "core/environment.h"

#include <fstream>
#include <thread>

#include "backend/cpu/blas.h"
#include "backend/cpu/blas_core.h"
#include "core/build_info.h"
#include "backend/gpu.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/host.h"
#include "parallel/communicator.h"

#ifndef DTNN_VERSION
#error "DTNN_VERSION (the CMake project version) must be defined by the build"
#endif

namespace dtnn {

namespace {

// The first processor's block of /proc/cpuinfo: "model name", "cpu family", "model", "stepping".
void read_cpuinfo(Environment& env) {
  std::ifstream f("/proc/cpuinfo");
  std::string family, number, stepping;
  for (std::string line; std::getline(f, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) {
      if (line.empty() && !family.empty()) break;
      continue;
    }
    std::string key = line.substr(0, colon), value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (key == "model name") env.cpu_model = value;
    if (key == "cpu family") family = value;
    if (key == "model") number = value;
    if (key == "stepping") stepping = value;
  }
  env.cpu_id = (env.cpu_model.empty() ? "unknown cpu" : env.cpu_model) + " (family " + family + " model " + number +
               " stepping " + stepping + ")";
}

Environment capture() {
  Environment env;
  env.host = host_name();
  read_cpuinfo(env);
  env.cores = static_cast<int>(std::thread::hardware_concurrency());
  env.machine = machine_identity();
#if defined(__clang__)
  env.compiler = std::string("clang ") + __clang_version__;
#else
  env.compiler = std::string("g++ ") + __VERSION__;
#endif
#ifdef NDEBUG
  env.build_type = "Release";
#else
  env.build_type = "Debug";
#endif
  env.dtnn_version = DTNN_VERSION;
  env.blas = cpu::blas_version();
  const std::string core = cpu::blas_core_note();  // how the kernels were chosen, when not by OpenBLAS alone
  if (core.find(' ') != std::string::npos) env.blas += " [" + core + "]";
  env.onednn = onednn_version();
  env.mpi = mpi_library_version();
  env.cuda = gpu_description();
  env.build_commit = build_info().commit;
  env.build_dirty = build_info().dirty;
  env.build_flags = build_info().flags;
  return env;
}

}  // namespace

const Environment& environment() {
  static const Environment env = capture();  // thread-safe initialisation (C++11 magic statics)
  return env;
}

}  // namespace dtnn
