// cuBLAS is loaded on the GPU backend's first call to it, not when a dtnn program starts
// (engine/backend/gpu/cublas_loader.cpp). No device is needed: loading the library needs none.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "backend/gpu.h"
#include "skip.h"

namespace {

// Whether a file named like `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("gpu: cuBLAS is mapped only once the backend first calls it", "[cpu]") {
  if (!dtnn::gpu_built()) {
    dtnn::test::skip("this dtnn was built without the GPU backend (" + dtnn::gpu_description() + ")");
    return;
  }
  // Linked, libcublas.so and libcublasLt.so were mapped (and ~370 ms spent initialising them) at every start.
  CHECK_FALSE(mapped("libcublas.so"));
  CHECK_FALSE(mapped("libcublasLt.so"));
  const std::string path = dtnn::load_cublas();
  CHECK_THAT(path, Catch::Contains("libcublas.so."));
  CHECK(mapped("libcublas.so"));
  CHECK(dtnn::load_cublas() == path);  // loaded once
}
