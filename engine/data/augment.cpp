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
  s.u_top = rng.uniform(), s.u_left = rng.uniform(), s.u_roll_y = rng.uniform(), s.u_roll_x = rng.uniform();
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

// A uniform integer in {0..n-1} from u in [0, 1).
int64_t pick(double u, int64_t n) { return std::min<int64_t>(static_cast<int64_t>(u * static_cast<double>(n)), n - 1); }

void zero_block(const ImageView& im, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (c1 <= c0) return;
  for (int64_t p = 0; p < im.planes; ++p)
    for (int64_t r = r0; r < r1; ++r) std::memset(im.row(p, r) + c0 * im.px, 0, sizeof(float) * (c1 - c0) * im.px);
}

// numpy.roll along rows by sy and columns by sx: out(r, x) = in((r - sy) mod h, (x - sx) mod w), in place.
void roll(const ImageView& im, int64_t sy, int64_t sx) {
  const int64_t row = im.w * im.px, my = ((-sy % im.h) + im.h) % im.h, mx = ((-sx % im.w) + im.w) % im.w;
  for (int64_t p = 0; p < im.planes; ++p) {
    float* plane = im.row(p, 0);
    std::rotate(plane, plane + my * row, plane + im.h * row);
    for (int64_t r = 0; r < im.h; ++r) std::rotate(im.row(p, r), im.row(p, r) + mx * im.px, im.row(p, r) + row);
  }
}

// PyDTNN's crop (augment.h): zero the corners outside a size x size window, then roll the image.
void pydtnn_crop(const ImageView& im, int64_t size, const SampleAugmentation& s) {
  const int64_t t = pick(s.u_top, im.h - size), l = pick(s.u_left, im.w - size);
  zero_block(im, 0, t, 0, l);
  zero_block(im, t + size, im.h, l + size, im.w);
  roll(im, pick(s.u_roll_y, im.h - size) - t, pick(s.u_roll_x, im.w - size) - l);
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
  DTNN_CHECK(!aug.crop || aug.crop_size < std::min(h, w), "--crop_images_size=", aug.crop_size,
             " must be smaller than the images' side (", h, "x", w, ")");
  const bool nchw = layout == Layout::nchw;
  for (int64_t b = 0; b < count; ++b) {
    const SampleAugmentation s = sample_augmentation(aug, epoch, indices[b]);
    const ImageView im{x + b * h * w * c, nchw ? c : 1, h, w, nchw ? 1 : c};
    if (s.flip) flip_w(im);
    if (s.crop && aug.crop_size > 0) pydtnn_crop(im, aug.crop_size, s);
    else if (s.crop) shift(im, s.dy - aug.crop_padding, s.dx - aug.crop_padding);
  }
}

}  // namespace dtnn
