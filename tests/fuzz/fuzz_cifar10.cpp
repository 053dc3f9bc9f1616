// CIFAR-10 binary batches (engine/data/cifar10.cpp): the input is every batch file of a dataset directory
// (data_batch_1..5.bin and test_batch.bin are links to it), then the first and last samples of both pools are
// loaded in both layouts and compared with the format read here from its description: records of a label byte
// and R, G, B planes of 32x32 bytes; each value (byte / 255 - mean) / std with the channel's mean and population
// std over the training pool (five copies of the input: the input's own), std 0 taken as 1; labels one-hot.
#include <algorithm>
#include <cmath>
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

constexpr int64_t kPlane = 32 * 32, kRecord = 1 + 3 * kPlane;

// The expected value of channel c, pixel p of record i, from the input bytes (two passes in double).
struct Expected {
  const uint8_t* data;
  double mean[3] = {}, std[3] = {};
  Expected(const uint8_t* d, int64_t records) : data(d) {
    for (int c = 0; c < 3; ++c) {
      double sum = 0.0, sq = 0.0;
      for (int64_t i = 0; i < records; ++i)
        for (int64_t p = 0; p < kPlane; ++p) sum += d[i * kRecord + 1 + c * kPlane + p] / 255.0;
      mean[c] = sum / static_cast<double>(records * kPlane);
      for (int64_t i = 0; i < records; ++i)
        for (int64_t p = 0; p < kPlane; ++p) {
          const double v = d[i * kRecord + 1 + c * kPlane + p] / 255.0 - mean[c];
          sq += v * v;
        }
      std[c] = std::sqrt(sq / static_cast<double>(records * kPlane));
      if (std[c] == 0.0) std[c] = 1.0;
    }
  }
  double x(int64_t i, int c, int64_t p) const {
    return (data[i * kRecord + 1 + c * kPlane + p] / 255.0 - mean[c]) / std[c];
  }
  int label(int64_t i) const { return data[i * kRecord]; }
};

void load_some(const dtnn::Dataset& data, dtnn::Pool pool, const Expected& want, int64_t records) {
  const int64_t n = data.count(pool);
  const int64_t indices[2] = {0, n - 1};
  std::vector<float> x(2 * 32 * 32 * 3), y(2 * 10);
  for (dtnn::Layout layout : {dtnn::Layout::nhwc, dtnn::Layout::nchw}) {
    data.load_batch(pool, indices, 2, layout, x.data(), y.data());
    for (int b = 0; b < 2; ++b) {
      const int64_t i = indices[b] % records;  // the training pool is the input five times over
      for (int c = 0; c < 3; ++c)
        for (int64_t p = 0; p < kPlane; ++p) {
          const float got = x[b * 3 * kPlane + (layout == dtnn::Layout::nchw ? c * kPlane + p : p * 3 + c)];
          const double w = want.x(i, c, p);
          dtnn::fuzz::require(std::fabs(got - w) <= 1e-5 * std::max(1.0, std::fabs(w)),
                              "a pixel is (byte / 255 - mean) / std of its channel");
        }
      for (int k = 0; k < 10; ++k)
        dtnn::fuzz::require(y[b * 10 + k] == (k == want.label(i) ? 1.0f : 0.0f), "the label is one-hot");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  static const bool linked = (link_batches(), true);
  (void)linked;
  fuzz::write_input(kInput, data, size);
  std::unique_ptr<Dataset> set;
  if (!fuzz::accepted([&] { set = open_cifar10(fuzz::scratch_dir(), fuzz::scratch_dir()); })) return 0;
  const int64_t records = static_cast<int64_t>(size) / kRecord;
  fuzz::require(static_cast<int64_t>(size) % kRecord == 0 && set->count(Pool::test) == records && records > 0 &&
                    set->count(Pool::train) == 5 * records,
                "an accepted file is whole records, each one sample");
  const Expected want(data, records);
  load_some(*set, Pool::train, want, records);
  load_some(*set, Pool::test, want, records);
  return 0;
}
