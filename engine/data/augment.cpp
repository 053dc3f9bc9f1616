// Flip and pad-and-crop, in place on preprocessed float batches (contract in augment.h).
#include "data/augment.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/rng.h"

namespace dtnn {

SampleAugmentation sample_augmentation(const Augmentation& aug, int64_t epoch, int64_t index) {
  // A fresh stream per (seed, epoch, index); every value is drawn whatever the options, so turning one
  // augmentation on does not change the other's decisions.
  Rng rng = Rng(aug.seed ^ 0xA06E17A7E5EEDull).fork(static_cast<uint64_t>(epoch)).fork(static_cast<uint64_t>(index));
  const double u_flip = rng.uniform(), u_crop = rng.uniform();
  const uint64_t span = static_cast<uint64_t>(2 * std::max<int64_t>(aug.crop_padding, 0) + 1);
  SampleAugmentation s;
  s.dy = static_cast<int64_t>(rng.below(span));
  s.dx = static_cast<int64_t>(rng.below(span));
  s.flip = aug.flip && u_flip < aug.flip_prob;
  s.crop = aug.crop && u_crop < aug.crop_prob;
  return s;
}

namespace {

// One image as planes of rows of pixels: NHWC is 1 plane of h rows of w pixels of c floats, NCHW is c
// planes of h rows of w pixels of 1 float.
struct ImageView {
  float* data;
  int64_t planes, h, w, px;  // px: floats per pixel
  float* row(int64_t p, int64_t r) const { return data + (p * h + r) * w * px; }
};

void flip_w(const ImageView& im) {
  for (int64_t p = 0; p < im.planes; ++p)
    for (int64_t r = 0; r < im.h; ++r) {
      float* row = im.row(p, r);
      for (int64_t a = 0, b = im.w - 1; a < b; ++a, --b)
        for (int64_t k = 0; k < im.px; ++k) std::swap(row[a * im.px + k], row[b * im.px + k]);
    }
}

// out(r, x) = in(r + sy, x + sx), zero where that is outside the image. Rows are visited in the order
// that reads every source row before it is overwritten; memmove handles the overlap within a row.
void shift(const ImageView& im, int64_t sy, int64_t sx) {
  const int64_t len = im.w - std::abs(sx);  // pixels copied per row
  const int64_t dst_x = std::max<int64_t>(0, -sx), src_x = std::max<int64_t>(0, sx);
  for (int64_t p = 0; p < im.planes; ++p)
    for (int64_t k = 0; k < im.h; ++k) {
      const int64_t r = sy >= 0 ? k : im.h - 1 - k, src_r = r + sy;
      float* dst = im.row(p, r);
      if (src_r < 0 || src_r >= im.h || len <= 0) {
        std::memset(dst, 0, sizeof(float) * im.w * im.px);
        continue;
      }
      std::memmove(dst + dst_x * im.px, im.row(p, src_r) + src_x * im.px, sizeof(float) * len * im.px);
      std::memset(dst, 0, sizeof(float) * dst_x * im.px);
      std::memset(dst + (dst_x + len) * im.px, 0, sizeof(float) * (im.w - dst_x - len) * im.px);
    }
}

}  // namespace

void augment_batch(const Augmentation& aug, int64_t epoch, const int64_t* indices, int64_t count, Layout layout,
                   int64_t h, int64_t w, int64_t c, float* x) {
  if (!aug.enabled()) return;
  DTNN_CHECK(aug.flip_prob >= 0.0 && aug.flip_prob <= 1.0, "--flip_images_prob must be in [0, 1] (got ",
             aug.flip_prob, ")");
  DTNN_CHECK(aug.crop_prob >= 0.0 && aug.crop_prob <= 1.0, "--crop_images_prob must be in [0, 1] (got ",
             aug.crop_prob, ")");
  DTNN_CHECK(aug.crop_padding >= 0, "--crop_images_padding must be non-negative (got ", aug.crop_padding, ")");
  const bool nchw = layout == Layout::nchw;
  for (int64_t b = 0; b < count; ++b) {
    const SampleAugmentation s = sample_augmentation(aug, epoch, indices[b]);
    const ImageView im{x + b * h * w * c, nchw ? c : 1, h, w, nchw ? 1 : c};
    if (s.flip) flip_w(im);
    if (s.crop) shift(im, s.dy - aug.crop_padding, s.dx - aug.crop_padding);
  }
}

}  // namespace dtnn
