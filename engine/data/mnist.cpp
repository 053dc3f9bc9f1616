// MNIST-format datasets from IDX files (MNIST, Fashion-MNIST, the mnist-10k subset).
#include <array>
#include <filesystem>

#include "core/error.h"
#include "data/dataset.h"
#include "data/idx.h"

namespace dtnn {
namespace {

std::string find_file(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  DTNN_CHECK(!dir.empty(), "no dataset directory given for ", base, " (use --dataset_train_path)");
  for (const std::string& name : {base, base + ".gz"}) {
    const fs::path p = fs::path(dir) / name;
    if (fs::exists(p)) return p.string();
  }
  fail(dir, ": neither ", base, " nor ", base, ".gz exists");
}

struct Images {
  IdxArray pixels;  // N x H x W
  std::vector<uint8_t> labels;
};

Images read_pair(const std::string& dir, const std::string& prefix) {
  Images s;
  const std::string image_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string label_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  s.pixels = read_idx_u8(image_path, 3, {28, 28});
  IdxArray labels = read_idx_u8(label_path, 1);
  DTNN_CHECK(labels.dims[0] == s.pixels.dims[0], label_path, ": ", labels.dims[0], " labels for ",
             s.pixels.dims[0], " images in ", image_path);
  for (size_t i = 0; i < labels.data.size(); ++i)
    DTNN_CHECK(labels.data[i] < 10, label_path, ": label ", int(labels.data[i]), " of sample ", i, " is not in 0..9");
  s.labels = std::move(labels.data);
  return s;
}

class Mnist final : public Dataset {
 public:
  Mnist(const std::string& train_dir, const std::string& test_dir)
      : train_(read_pair(train_dir, "train")), test_(read_pair(test_dir, "t10k")) {
    shape_ = dataset_shape("mnist");
    shape_.train_count = static_cast<int64_t>(train_.labels.size());
    shape_.test_count = static_cast<int64_t>(test_.labels.size());
  }
  const DatasetShape& shape() const override { return shape_; }
  int64_t count(Pool pool) const override { return pool == Pool::train ? shape_.train_count : shape_.test_count; }

  // One channel: NHWC and NCHW hold the same bytes. Pixels are byte / 255 rounded as float32 division
  // rounds it (PyDTNN's numpy X.astype(float32) / 255, torchvision's ToTensor), from a table: multiplying by
  // 1 / 255 would be off by one bit for half the bytes.
  void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout, float* x, float* y) const override {
    const Images& s = pool == Pool::train ? train_ : test_;
    constexpr int64_t kPixels = 28 * 28;
    for (int64_t b = 0; b < count; ++b) {
      const uint8_t* src = s.pixels.data.data() + indices[b] * kPixels;
      float* dst = x + b * kPixels;
      for (int64_t i = 0; i < kPixels; ++i) dst[i] = scaled_[src[i]];
      float* label = y + b * 10;
      for (int64_t j = 0; j < 10; ++j) label[j] = 0.0f;
      label[s.labels[indices[b]]] = 1.0f;
    }
  }

 private:
  Images train_, test_;
  DatasetShape shape_;
  const std::array<float, 256> scaled_ = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[static_cast<size_t>(v)] = static_cast<float>(v) / 255.0f;
    return t;
  }();
};

}  // namespace

std::unique_ptr<Dataset> open_mnist(const std::string& train_dir, const std::string& test_dir) {
  return std::make_unique<Mnist>(train_dir, test_dir.empty() ? train_dir : test_dir);
}

}  // namespace dtnn
