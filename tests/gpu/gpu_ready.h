// The GPU tests' shared start (tests/gpu/test_gpu*.cpp): skip out loud without a GPU, and device reads.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/gpu.h"
#include "backend/gpu_ops.h"
#include "skip.h"

namespace dtnn::test {

// Called first in every case: under ctest, a machine or build without a GPU exits the process here (77).
inline bool gpu_ready() {
  if (!gpu_built()) {
    skip("this dtnn was built without the GPU backend (" + gpu_description() + ")");
    return false;
  }
  if (gpu_device_count() == 0) {
    skip("no CUDA device on this machine (" + gpu_description() + ")");
    return false;
  }
  gpu::init(0);
  gpu::set_allow_tf32(false);
  return true;
}

inline std::vector<float> to_host(const float* device, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  gpu::copy_to_host(v.data(), device, static_cast<size_t>(n) * sizeof(float));
  return v;
}

}  // namespace dtnn::test
