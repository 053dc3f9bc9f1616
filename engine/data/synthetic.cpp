// Synthetic data of any dataset's shape, the dataset shape table, the default shuffle and the splits.
#include <algorithm>
#include <utility>

#include "core/error.h"
#include "data/dataset.h"

namespace dtnn {

DatasetShape dataset_shape(const std::string& name) {
  if (name == "mnist") return {"mnist", 28, 28, 1, 10, 60000, 10000};
  if (name == "cifar10") return {"cifar10", 32, 32, 3, 10, 50000, 10000};
  if (name == "imagenet") return {"imagenet", 224, 224, 3, 1000, 1281167, 50000};
  fail("unknown dataset '", name, "' (known: mnist, cifar10, imagenet)");
}

void fisher_yates(std::vector<int64_t>& indices, Rng& rng) {
  for (int64_t i = static_cast<int64_t>(indices.size()) - 1; i > 0; --i)
    std::swap(indices[i], indices[rng.below(static_cast<uint64_t>(i + 1))]);
}

void Dataset::shuffle(std::vector<int64_t>& indices, Rng& rng) const { fisher_yates(indices, rng); }

namespace {

class Synthetic final : public Dataset {
 public:
  Synthetic(const DatasetShape& shape, uint64_t seed) : shape_(shape), base_(seed ^ 0x5A17E71Cull) {}
  const DatasetShape& shape() const override { return shape_; }
  int64_t count(Pool pool) const override { return pool == Pool::train ? shape_.train_count : shape_.test_count; }
  bool synthetic() const override { return true; }

  void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout, float* x, float* y) const override {
    // Every element is i.i.d., so the layout does not change the distribution; each sample's values are
    // a pure function of (seed, pool, index).
    const int64_t size = shape_.h * shape_.w * shape_.c;
    for (int64_t b = 0; b < count; ++b) {
      Rng rng = base_.fork(static_cast<uint64_t>(indices[b]) * 2 + (pool == Pool::test ? 1 : 0));
      float* dst = x + b * size;
      for (int64_t i = 0; i < size; ++i) dst[i] = rng.uniform_f();
      float* label = y + b * shape_.classes;
      for (int64_t j = 0; j < shape_.classes; ++j) label[j] = 0.0f;
      label[rng.below(static_cast<uint64_t>(shape_.classes))] = 1.0f;
    }
  }

 private:
  DatasetShape shape_;
  Rng base_;
};

}  // namespace

std::unique_ptr<Dataset> make_synthetic(const DatasetShape& shape, uint64_t seed) {
  return std::make_unique<Synthetic>(shape, seed);
}

int64_t limited_count(const Dataset& data, Pool pool, const PoolLimits& limits) {
  const int64_t n = data.count(pool), limit = pool == Pool::train ? limits.train : limits.test;
  return limit > 0 ? std::min(n, limit) : n;
}

Splits make_splits(const Dataset& data, double validation_split, bool test_as_validation, uint64_t seed,
                   const PoolLimits& limits) {
  DTNN_CHECK(validation_split >= 0.0 && validation_split < 1.0, "--validation_split must be in [0, 1) (got ",
             validation_split, ")");
  Splits s;
  const int64_t n = limited_count(data, Pool::train, limits);
  if (test_as_validation) {
    s.val_pool = Pool::test;
    for (int64_t i = 0; i < limited_count(data, Pool::test, limits); ++i) s.val.push_back(i);
    for (int64_t i = 0; i < n; ++i) s.train.push_back(i);
    return s;
  }
  const int64_t nval = static_cast<int64_t>(static_cast<double>(n) * validation_split);
  Rng rng(seed ^ 0x7A11DA7Eull);
  const int64_t start = nval > 0 ? static_cast<int64_t>(rng.below(static_cast<uint64_t>(n))) : 0;
  std::vector<char> is_val(n, 0);
  for (int64_t i = 0; i < nval; ++i) is_val[(start + i) % n] = 1;
  for (int64_t i = 0; i < nval; ++i) s.val.push_back((start + i) % n);
  for (int64_t i = 0; i < n; ++i)
    if (!is_val[i]) s.train.push_back(i);
  DTNN_CHECK(!s.train.empty(), "the validation split leaves no training samples");
  return s;
}

}  // namespace dtnn
