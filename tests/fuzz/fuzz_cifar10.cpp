// CIFAR-10 binary batches (engine/data/cifar10.cpp): the input is every batch file of a dataset directory
// (data_batch_1..5.bin and test_batch.bin are links to it), then the first and last samples are loaded in
// both layouts.
#include <vector>

#include "data/dataset.h"
#include "fuzz_common.h"

namespace {

const char* kInput = "input.bin";

void link_batches() {
  namespace fs = std::filesystem;
  const std::string names[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                               "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
  for (const std::string& name : names) fs::create_symlink(kInput, dtnn::fuzz::scratch_path(name));
}

void load_some(const dtnn::Dataset& data, dtnn::Pool pool) {
  const int64_t n = data.count(pool);
  const int64_t indices[2] = {0, n - 1};
  std::vector<float> x(2 * 32 * 32 * 3), y(2 * 10);
  for (dtnn::Layout layout : {dtnn::Layout::nhwc, dtnn::Layout::nchw})
    data.load_batch(pool, indices, 2, layout, x.data(), y.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  static const bool linked = (link_batches(), true);
  (void)linked;
  fuzz::write_input(kInput, data, size);
  std::unique_ptr<Dataset> set;
  if (!fuzz::accepted([&] { set = open_cifar10(fuzz::scratch_dir(), fuzz::scratch_dir()); })) return 0;
  fuzz::require(set->count(Pool::train) == 5 * set->count(Pool::test) && set->count(Pool::test) > 0,
                "every batch file is the same input");
  load_some(*set, Pool::train);
  load_some(*set, Pool::test);
  return 0;
}
