// CIFAR-10, binary version (https://www.cs.toronto.edu/~kriz/cifar.html): records of 1 label byte and
// 3072 pixel bytes (R, G, B planes of 32x32, row-major).
//
// PyDTNN divides by 255 and standardises each channel with the mean and std of the whole training pool
// (train + validation, over N, H, W), reusing them for the test set. Here the statistics come from a
// per-channel histogram of byte values, summed in double, so they do not depend on summation order;
// load_batch maps bytes through a 256-entry table per channel, (v / 255 - mean) / std, computed once.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "data/dataset.h"

namespace dtnn {
namespace {

constexpr int64_t kSide = 32, kChannels = 3, kPlane = kSide * kSide, kPixels = kPlane * kChannels;
constexpr int64_t kRecord = 1 + kPixels, kClasses = 10;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

struct Images {
  std::vector<uint8_t> pixels;  // N x 3072, CHW per image, as in the file
  std::vector<uint8_t> labels;  // N
};

// Appends the records of one file.
void read_file(const std::string& path, Images& s) {
  namespace fs = std::filesystem;
  DTNN_CHECK(fs::exists(path), path, ": CIFAR-10 file not found");
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  DTNN_CHECK(!ec, path, ": cannot read the file size (", ec.message(), ")");
  DTNN_CHECK(size > 0, path, ": empty file (expected records of ", kRecord, " bytes)");
  DTNN_CHECK(size % kRecord == 0, path, ": size ", size, " bytes is not a multiple of the ", kRecord,
             "-byte CIFAR-10 record (truncated or not a CIFAR-10 binary file)");
  const int64_t n = static_cast<int64_t>(size / kRecord);
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  DTNN_CHECK(f, path, ": cannot open file");
  const size_t base = s.labels.size();
  s.labels.resize(base + n);
  s.pixels.resize((base + n) * kPixels);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t label;
    DTNN_CHECK(std::fread(&label, 1, 1, f.get()) == 1 &&
                   std::fread(&s.pixels[(base + i) * kPixels], 1, kPixels, f.get()) == static_cast<size_t>(kPixels),
               path, ": read error in record ", i);
    DTNN_CHECK(label < kClasses, path, ": label ", int(label), " of record ", i, " is not in 0..9");
    s.labels[base + i] = label;
  }
}

std::string join(const std::string& dir, const std::string& name) {
  DTNN_CHECK(!dir.empty(), "no dataset directory given for ", name, " (use --dataset_train_path)");
  return (std::filesystem::path(dir) / name).string();
}

class Cifar10 final : public Dataset {
 public:
  Cifar10(const std::string& train_dir, const std::string& test_dir) {
    for (int k = 1; k <= 5; ++k) read_file(join(train_dir, "data_batch_" + std::to_string(k) + ".bin"), train_);
    read_file(join(test_dir, "test_batch.bin"), test_);
    shape_ = dataset_shape("cifar10");
    shape_.train_count = static_cast<int64_t>(train_.labels.size());
    shape_.test_count = static_cast<int64_t>(test_.labels.size());

    // Mean and population std (numpy's default, ddof = 0) of x / 255 per channel over the training pool.
    std::vector<int64_t> hist(kChannels * 256, 0);
    for (int64_t i = 0; i < shape_.train_count; ++i)
      for (int64_t c = 0; c < kChannels; ++c) {
        const uint8_t* plane = &train_.pixels[i * kPixels + c * kPlane];
        int64_t* h = &hist[c * 256];
        for (int64_t p = 0; p < kPlane; ++p) ++h[plane[p]];
      }
    const double count = static_cast<double>(shape_.train_count * kPlane);
    for (int64_t c = 0; c < kChannels; ++c) {
      double sum = 0.0;
      for (int v = 0; v < 256; ++v) sum += static_cast<double>(hist[c * 256 + v]) * (v / 255.0);
      const double mean = sum / count;
      double sq = 0.0;
      for (int v = 0; v < 256; ++v) sq += static_cast<double>(hist[c * 256 + v]) * (v / 255.0 - mean) * (v / 255.0 - mean);
      double std = std::sqrt(sq / count);
      if (std == 0.0) std = 1.0;  // a constant channel (only in toy data): subtract the mean, do not divide by 0
      for (int v = 0; v < 256; ++v) lut_[c * 256 + v] = static_cast<float>((v / 255.0 - mean) / std);
    }
  }

  const DatasetShape& shape() const override { return shape_; }
  int64_t count(Pool pool) const override { return pool == Pool::train ? shape_.train_count : shape_.test_count; }

  void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout layout, float* x,
                  float* y) const override {
    const Images& s = pool == Pool::train ? train_ : test_;
    for (int64_t b = 0; b < count; ++b) {
      const uint8_t* src = &s.pixels[indices[b] * kPixels];
      float* dst = x + b * kPixels;
      if (layout == Layout::nchw) {
        for (int64_t c = 0; c < kChannels; ++c) {
          const float* lut = &lut_[c * 256];
          for (int64_t p = 0; p < kPlane; ++p) dst[c * kPlane + p] = lut[src[c * kPlane + p]];
        }
      } else {
        for (int64_t p = 0; p < kPlane; ++p)
          for (int64_t c = 0; c < kChannels; ++c) dst[p * kChannels + c] = lut_[c * 256 + src[c * kPlane + p]];
      }
      float* label = y + b * kClasses;
      for (int64_t j = 0; j < kClasses; ++j) label[j] = 0.0f;
      label[s.labels[indices[b]]] = 1.0f;
    }
  }

 private:
  Images train_, test_;
  DatasetShape shape_;
  float lut_[kChannels * 256] = {};
};

}  // namespace

std::unique_ptr<Dataset> open_cifar10(const std::string& train_dir, const std::string& test_dir) {
  return std::make_unique<Cifar10>(train_dir, test_dir.empty() ? train_dir : test_dir);
}

}  // namespace dtnn
