// Datasets: where samples come from, and how a batch of them becomes float tensors.
//
// A dataset holds a train+validation pool and a test set. Samples are addressed by index; load_batch()
// writes count samples as float32 activations in the requested layout (already scaled, e.g. /255) and
// one-hot labels (count x classes). It never allocates, so the trainer can call it every step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "tensor/tensor.h"

namespace dtnn {

struct DatasetShape {
  std::string name;  // "mnist"
  int64_t h = 0, w = 0, c = 0, classes = 0;
  int64_t train_count = 0, test_count = 0;  // the real dataset's sizes (synthetic data copies them)
};

enum class Pool { train, test };

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual const DatasetShape& shape() const = 0;
  virtual int64_t count(Pool pool) const = 0;
  virtual bool synthetic() const { return false; }
  virtual void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout layout, float* x,
                          float* y) const = 0;
};

// The shape of a dataset by name ("mnist"); throws dtnn::Error for an unknown name.
DatasetShape dataset_shape(const std::string& name);

// MNIST-format IDX files (also Fashion-MNIST): train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]
// in train_dir, t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz] in test_dir. Pixels / 255.
std::unique_ptr<Dataset> open_mnist(const std::string& train_dir, const std::string& test_dir);

// Deterministic pseudo-random images (uniform in [0, 1)) and labels of the given shape, generated on the
// fly from (seed, pool, index): no memory, same sample for the same index on every rank.
std::unique_ptr<Dataset> make_synthetic(const DatasetShape& shape, uint64_t seed);

// Which pool indices train and which validate. PyDTNN semantics: the validation set is a contiguous
// window of int(N * validation_split) samples of the train pool starting at a seeded random index
// (wrapping around); with test_as_validation the test set validates and the whole pool trains.
struct Splits {
  std::vector<int64_t> train;  // indices into Pool::train
  std::vector<int64_t> val;    // indices into val_pool
  Pool val_pool = Pool::train;
};
Splits make_splits(const Dataset& data, double validation_split, bool test_as_validation, uint64_t seed);

}  // namespace dtnn
