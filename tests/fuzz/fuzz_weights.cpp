// Weights files (--weights_and_bias_filename; engine/train/weights.cpp) loaded into tiny_model.h's model.
#include "fuzz_common.h"
#include "tiny_model.h"
#include "train/output.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = dtnn::fuzz::seed_to_write()) {
    dtnn::save_weights(*dtnn::fuzz::tiny_run().model, seed);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  fuzz::TinyRun& run = fuzz::tiny_run();
  const std::string path = fuzz::write_input("weights.npz", data, size);
  fuzz::accepted([&] { load_weights(*run.model, path); });
  return 0;
}
