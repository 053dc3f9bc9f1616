// ImageNet NPZ shards (engine/data/imagenet.cpp): the input is the only shard of a dataset directory,
// opened for 4x4 images (the seeds hold 5x5 ones, so the center crop runs), then a few samples of each
// pool are loaded in both layouts (decoding the shard).
#include <vector>

#include "data/dataset.h"
#include "fuzz_common.h"

namespace {

constexpr int64_t kSide = 4, kBatch = 3;

void load_some(const dtnn::Dataset& data, dtnn::Pool pool) {
  const int64_t n = data.count(pool);
  if (n == 0) return;
  const int64_t indices[kBatch] = {0, n / 2, n - 1};
  std::vector<float> x(kBatch * 3 * kSide * kSide), y(kBatch * 1000);
  for (dtnn::Layout layout : {dtnn::Layout::nhwc, dtnn::Layout::nchw})
    data.load_batch(pool, indices, kBatch, layout, x.data(), y.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  fuzz::write_input("shard.npz", data, size);
  std::unique_ptr<Dataset> set;
  if (!fuzz::accepted([&] { set = open_imagenet(fuzz::scratch_dir(), fuzz::scratch_dir(), kSide, kSide); })) return 0;
  // Corrupt data and bad labels surface when a batch decodes the shard: that is a refusal too.
  fuzz::accepted([&] {
    load_some(*set, Pool::train);
    load_some(*set, Pool::test);
  });
  return 0;
}
