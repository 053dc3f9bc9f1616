// Datasets: where samples come from, and how a batch of them becomes float tensors.
//
// A dataset holds a train+validation pool and a test set. Samples are addressed by index; load_batch()
// writes count samples as float32 activations in the requested layout (already scaled, e.g. /255) and
// one-hot labels (count x classes). It never allocates, so the trainer can call it every step (the
// ImageNet reader is the exception: it decodes a shard when a batch first touches it, about once per
// 1251 samples, into a small cache). load_batch may run on a loader thread (data/loader.h), not the one
// that opened the dataset, but never on two threads at once.
//
// Readers and their preprocessing follow PyDTNN (research notes §6):
//   mnist    IDX files, x / 255.
//   cifar10  the binary version, x / 255 then per-channel standardisation with the training pool's mean
//            and std (over N, H, W; the test set reuses them).
//   imagenet NPZ shards of uint8 NCHW images, center crop to the model's input size, RGB -> BGR, Caffe
//            mean subtraction (no std).
// Augmentation (flip, pad-and-crop) is not a dataset's business: data/augment.h applies it to training
// batches after load_batch.
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
  // Permutes a list of training indices in place for one epoch, drawing only from rng (every rank passes
  // the same stream and gets the same order). Default: a Fisher-Yates shuffle. Datasets whose samples are
  // expensive to reach at random (ImageNet shards) override it to keep consecutive samples together.
  virtual void shuffle(std::vector<int64_t>& indices, Rng& rng) const;
};

// The shape of a dataset by name ("mnist", "cifar10", "imagenet"); throws dtnn::Error listing the known
// names for any other.
DatasetShape dataset_shape(const std::string& name);

// MNIST-format IDX files (also Fashion-MNIST): train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]
// in train_dir, t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz] in test_dir. Pixels / 255.
std::unique_ptr<Dataset> open_mnist(const std::string& train_dir, const std::string& test_dir);

// CIFAR-10, binary version: data_batch_1.bin .. data_batch_5.bin in train_dir (the training pool, in
// that order) and test_batch.bin in test_dir. Each record is 1 label byte (0..9) then 3072 pixel bytes,
// the R, G and B planes of a 32x32 image. Pixels stay uint8 in memory (184 MB for the full set) and are
// scaled and standardised per batch. Throws dtnn::Error naming the file for a missing or empty file, a
// size that is not a multiple of 3073 bytes, or a label above 9.
std::unique_ptr<Dataset> open_cifar10(const std::string& train_dir, const std::string& test_dir);

// ImageNet as PyDTNN stores it: every *.npz in train_dir (the training pool) and test_dir (the test set),
// in name order, any number of files of any number of samples. Each holds `x`, uint8 (n, 3, H, W) RGB
// NCHW, and `y`, integer (n,) or (n, 1) labels 1..1000 (PyDTNN's convention; class = label - 1). Opening
// reads only the archives' headers (io::read_npz_info) to count samples; load_batch decodes a whole shard
// when it first needs one and keeps the two most recently used. Images are center-cropped to out_h x
// out_w (227 -> 224 drops the first row/column and the last two, as PyDTNN's x[..., 1:225, 1:225]; no
// crop when the sizes are equal). Throws dtnn::Error naming the file for: no *.npz files, a missing `x`
// or `y`, wrong dtypes or shapes, images smaller than out_h x out_w, and (in load_batch) a label outside
// 1..1000; corrupt archives throw io::NpzError.
std::unique_ptr<Dataset> open_imagenet(const std::string& train_dir, const std::string& test_dir, int64_t out_h,
                                       int64_t out_w);

// Deterministic pseudo-random images (uniform in [0, 1)) and labels of the given shape, generated on the
// fly from (seed, pool, index): no memory, same sample for the same index on every rank.
std::unique_ptr<Dataset> make_synthetic(const DatasetShape& shape, uint64_t seed);

// --pad_to_cifar: a 28x28x1 dataset seen as 32x32x3 (zero-padded by 2, gray copied to 3 channels), so
// CIFAR-shaped models train on (Fashion-)MNIST. load_batch takes at most max_batch samples.
std::unique_ptr<Dataset> pad_to_cifar(std::unique_ptr<Dataset> inner, int64_t max_batch);

// --resize: MNIST-format files (8-bit, one channel) resized to out_h x out_w as d2l's loader does
// (Pillow's bilinear Image.resize on the bytes, then / 255: data/resize.cpp). load_batch takes at most
// max_batch samples. Throws dtnn::Error for other data or a side outside 1..4096.
std::unique_ptr<Dataset> resize_images(std::unique_ptr<Dataset> inner, int64_t out_h, int64_t out_w, int64_t max_batch);

// Fisher-Yates shuffle of indices drawing from rng: the default Dataset::shuffle.
void fisher_yates(std::vector<int64_t>& indices, Rng& rng);

// Which pool indices train and which validate. PyDTNN semantics: the validation set is a contiguous
// window of int(N * validation_split) samples of the train pool starting at a seeded random index
// (wrapping around); with test_as_validation the test set validates and the whole pool trains.
// `limits`: when > 0, only the first that many samples of a pool take part (PyDTNN's --steps_per_epoch on
// ImageNet keeps whole shards: train/run.h step_capped_pools).
struct Splits {
  std::vector<int64_t> train;  // indices into Pool::train
  std::vector<int64_t> val;    // indices into val_pool
  Pool val_pool = Pool::train;
};
struct PoolLimits {
  int64_t train = 0, test = 0;  // 0: the whole pool
};
int64_t limited_count(const Dataset& data, Pool pool, const PoolLimits& limits);
Splits make_splits(const Dataset& data, double validation_split, bool test_as_validation, uint64_t seed,
                   const PoolLimits& limits = {});

}  // namespace dtnn
