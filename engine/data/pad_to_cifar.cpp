// --pad_to_cifar: MNIST-format data (28x28x1) presented as CIFAR-shaped 32x32x3 images, so the CIFAR
// models of the zoo (resnet20_cifar10, vgg3dobn, ...) train on Fashion-MNIST. Each image is zero-padded
// by 2 pixels on every side (0 is the background of x/255 MNIST pixels) and its gray channel copied to
// the three channels. The PyTorch reference (experiments/reference/torch_train.py --pad_to_cifar) does the
// same, so the two can be compared on the same inputs.
#include <cstring>

#include "core/error.h"
#include "data/dataset.h"

namespace dtnn {
namespace {

class PaddedToCifar final : public Dataset {
 public:
  PaddedToCifar(std::unique_ptr<Dataset> inner, int64_t max_batch)
      : inner_(std::move(inner)), shape_(inner_->shape()),
        scratch_(Tensor::zeros(Shape{std::max<int64_t>(max_batch, 1), 28 * 28})), max_batch_(max_batch) {
    const DatasetShape& s = inner_->shape();
    DTNN_CHECK(s.h == 28 && s.w == 28 && s.c == 1, "--pad_to_cifar needs 28x28x1 images (MNIST format), not ", s.h,
               "x", s.w, "x", s.c);
    shape_.h = shape_.w = 32;
    shape_.c = 3;
  }
  const DatasetShape& shape() const override { return shape_; }
  int64_t count(Pool pool) const override { return inner_->count(pool); }
  bool synthetic() const override { return inner_->synthetic(); }
  void shuffle(std::vector<int64_t>& indices, Rng& rng) const override { inner_->shuffle(indices, rng); }

  void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout layout, float* x,
                  float* y) const override {
    DTNN_ASSERT(count <= max_batch_);
    float* gray = scratch_.data();
    inner_->load_batch(pool, indices, count, Layout::nhwc, gray, y);  // C = 1: both layouts are the same
    constexpr int64_t H = 32, W = 32, C = 3, P = 2;
    for (int64_t b = 0; b < count; ++b) {
      float* dst = x + b * H * W * C;
      std::memset(dst, 0, H * W * C * sizeof(float));
      const float* src = gray + b * 28 * 28;
      for (int64_t i = 0; i < 28; ++i)
        for (int64_t j = 0; j < 28; ++j) {
          const float v = src[i * 28 + j];
          for (int64_t c = 0; c < C; ++c)
            dst[layout == Layout::nchw ? (c * H + i + P) * W + j + P : ((i + P) * W + j + P) * C + c] = v;
        }
    }
  }

 private:
  std::unique_ptr<Dataset> inner_;
  DatasetShape shape_;
  Tensor scratch_;  // one batch of 28x28 images, allocated once
  int64_t max_batch_;
};

}  // namespace

std::unique_ptr<Dataset> pad_to_cifar(std::unique_ptr<Dataset> inner, int64_t max_batch) {
  return std::make_unique<PaddedToCifar>(std::move(inner), max_batch);
}

}  // namespace dtnn
