// --resize: MNIST-format images resized to out_h x out_w as d2l's loader resizes them. d2l's
// load_data_fashion_mnist(resize=96) puts torchvision's transforms.Resize before ToTensor, so the resize
// is Pillow's Image.resize(BILINEAR) on the 8-bit image; this file reproduces that byte for byte (Pillow
// 9.x, libImaging/Resample.c), so dtnn and d2l train on the same pixels:
//   - a triangle filter of support 1 around each output pixel's centre, (x + 0.5) * in / out, widened by
//     in / out when shrinking (antialiased); weights over the covered input pixels, normalised to sum 1;
//   - weights as 22-bit fixed-point integers, rounded half away from zero;
//   - two passes, horizontal then vertical (a pass is skipped when its side keeps its size), each output
//     byte = (sum of byte x weight + half) >> 22, clipped to 0..255;
// then ToTensor's byte / 255 in float32. Input pixels come back as bytes from the dataset's x / 255.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "data/dataset.h"

namespace dtnn {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

// One pass's taps: output pixel o reads input pixels [first[o], first[o] + count[o]) with weights
// weight[o * ksize + k].
struct Taps {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weight;
};

Taps bilinear_taps(int in, int out) {
  const double scale = static_cast<double>(in) / out;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;
  Taps t;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out));
  t.count.resize(static_cast<size_t>(out));
  t.weight.assign(static_cast<size_t>(out) * static_cast<size_t>(t.ksize), 0);
  std::vector<double> k(static_cast<size_t>(t.ksize));
  for (int o = 0; o < out; ++o) {
    const double center = (o + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);  // C truncation, as Pillow's
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in) - xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double d = std::fabs((x + xmin - center + 0.5) / filterscale);
      k[static_cast<size_t>(x)] = d < 1.0 ? 1.0 - d : 0.0;
      sum += k[static_cast<size_t>(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      const double w = sum != 0.0 ? k[static_cast<size_t>(x)] / sum : k[static_cast<size_t>(x)];
      const double fixed = w * (1 << kPrecisionBits);
      t.weight[static_cast<size_t>(o * t.ksize + x)] = static_cast<int32_t>(w < 0 ? fixed - 0.5 : fixed + 0.5);
    }
    t.first[static_cast<size_t>(o)] = xmin;
    t.count[static_cast<size_t>(o)] = xmax;
  }
  return t;
}

uint8_t clip8(int32_t v) {
  if (v >= (1 << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

// out[o * out_step] = filtered in[i * in_step] for o < taps.first.size(): one row or one column.
void filter_line(const Taps& t, const uint8_t* in, int64_t in_step, uint8_t* out, int64_t out_step) {
  for (size_t o = 0; o < t.first.size(); ++o) {
    int32_t acc = 1 << (kPrecisionBits - 1);
    const int32_t* w = &t.weight[o * static_cast<size_t>(t.ksize)];
    for (int x = 0; x < t.count[o]; ++x) acc += in[(t.first[o] + x) * in_step] * w[x];
    out[static_cast<int64_t>(o) * out_step] = clip8(acc);
  }
}

class Resized final : public Dataset {
 public:
  Resized(std::unique_ptr<Dataset> inner, int64_t out_h, int64_t out_w, int64_t max_batch)
      : inner_(std::move(inner)), shape_(inner_->shape()), max_batch_(std::max<int64_t>(max_batch, 1)) {
    const DatasetShape& s = inner_->shape();
    DTNN_CHECK(s.c == 1 && !inner_->synthetic(), "--resize applies to MNIST-format image files (8-bit, one channel)");
    DTNN_CHECK(out_h > 0 && out_w > 0 && out_h <= 4096 && out_w <= 4096, "--resize=", out_h, "x", out_w,
               ": sides must be 1..4096");
    shape_.h = out_h;
    shape_.w = out_w;
    rows_ = bilinear_taps(static_cast<int>(s.h), static_cast<int>(out_h));
    cols_ = bilinear_taps(static_cast<int>(s.w), static_cast<int>(out_w));
    in_ = Tensor::zeros(Shape{max_batch_, s.h * s.w});
    bytes_.resize(static_cast<size_t>(s.h * s.w));
    wide_.resize(static_cast<size_t>(s.h * out_w));
    out_.resize(static_cast<size_t>(out_h * out_w));
    for (int v = 0; v < 256; ++v) to_float_[v] = static_cast<float>(v) / 255.0f;  // ToTensor's division
  }
  const DatasetShape& shape() const override { return shape_; }
  int64_t count(Pool pool) const override { return inner_->count(pool); }
  void shuffle(std::vector<int64_t>& indices, Rng& rng) const override { inner_->shuffle(indices, rng); }

  // One channel: NHWC and NCHW hold the same values, so layout does not matter.
  void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout layout, float* x,
                  float* y) const override {
    DTNN_ASSERT(count <= max_batch_);
    const int64_t h = inner_->shape().h, w = inner_->shape().w, oh = shape_.h, ow = shape_.w;
    inner_->load_batch(pool, indices, count, layout, in_.data(), y);
    for (int64_t b = 0; b < count; ++b) {
      const float* src = in_.data() + b * h * w;
      for (int64_t i = 0; i < h * w; ++i)
        bytes_[static_cast<size_t>(i)] = static_cast<uint8_t>(std::lrint(src[i] * 255.0f));
      const uint8_t* rows_in = bytes_.data();
      if (ow != w) {
        for (int64_t r = 0; r < h; ++r) filter_line(cols_, bytes_.data() + r * w, 1, wide_.data() + r * ow, 1);
        rows_in = wide_.data();
      }
      if (oh != h)
        for (int64_t c = 0; c < ow; ++c) filter_line(rows_, rows_in + c, ow, out_.data() + c, ow);
      else
        std::memcpy(out_.data(), rows_in, static_cast<size_t>(oh * ow));
      float* dst = x + b * oh * ow;
      for (int64_t i = 0; i < oh * ow; ++i) dst[i] = to_float_[out_[static_cast<size_t>(i)]];
    }
  }

 private:
  std::unique_ptr<Dataset> inner_;
  DatasetShape shape_;
  int64_t max_batch_;
  Taps rows_, cols_;
  // Scratch sized once: the inner batch, one image's bytes, after the horizontal pass, after both.
  Tensor in_;
  mutable std::vector<uint8_t> bytes_, wide_, out_;
  float to_float_[256];
};

}  // namespace

std::unique_ptr<Dataset> resize_images(std::unique_ptr<Dataset> inner, int64_t out_h, int64_t out_w,
                                       int64_t max_batch) {
  return std::make_unique<Resized>(std::move(inner), out_h, out_w, max_batch);
}

}  // namespace dtnn
