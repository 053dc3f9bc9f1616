// Checkpoints (--resume_from; engine/train/checkpoint.cpp) loaded into tiny_model.h's run: options, epoch
// rows, optimizer slabs, the state slab, weights and scheduler state.
#include "fuzz_common.h"
#include "tiny_model.h"
#include "train/checkpoint.h"

namespace {

// Two epochs with a validation pass in the second, so the seed has every kind of epoch row.
dtnn::CheckpointState seed_state() {
  dtnn::CheckpointState state;
  state.epoch = 2;
  for (int e = 1; e <= 2; ++e) {
    dtnn::EpochRecord r;
    r.epoch = e;
    r.learning_rate = 0.001;
    r.train = {8, 0.01, {1.1 / e, 0.25 * e}};
    if (e == 2) r.val = dtnn::PassResult{4, 0.005, {1.3, 0.5}};
    state.epochs.push_back(r);
  }
  return state;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = dtnn::fuzz::seed_to_write()) {
    dtnn::fuzz::TinyRun& run = dtnn::fuzz::tiny_run();
    dtnn::save_checkpoint(seed, *run.model, *run.optimizer, *run.schedulers, run.options, 1, seed_state());
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  fuzz::TinyRun& run = fuzz::tiny_run();
  const std::string path = fuzz::write_input("checkpoint.npz", data, size);
  fuzz::accepted([&] { load_checkpoint(path, *run.model, *run.optimizer, *run.schedulers, run.options, 1, nullptr); });
  return 0;
}
