// Augmentation: flips and pad-and-crop shifts of known images in both layouts (expected images built
// here), probabilities 0, 1 and 1/2, and decisions that depend only on (seed, epoch, index).
#include <catch2/catch.hpp>
#include <set>

#include "data/augment.h"
#include "data/data_helpers.h"

using namespace dtnn;

namespace {

// A batch of n images of h x w x c whose values encode (sample, row, column, channel), never zero.
struct Images {
  int64_t n, h, w, c;
  float value(int64_t b, int64_t r, int64_t x, int64_t ch) const { return 1 + 1000 * b + 100 * r + 10 * x + ch; }
  int64_t offset(Layout layout, int64_t b, int64_t r, int64_t x, int64_t ch) const {
    return b * h * w * c + (layout == Layout::nchw ? (ch * h + r) * w + x : (r * w + x) * c + ch);
  }
  std::vector<float> make(Layout layout) const {
    std::vector<float> v(n * h * w * c);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t r = 0; r < h; ++r)
        for (int64_t x = 0; x < w; ++x)
          for (int64_t ch = 0; ch < c; ++ch) v[offset(layout, b, r, x, ch)] = value(b, r, x, ch);
    return v;
  }
};

std::vector<int64_t> iota(int64_t n, int64_t first = 0) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = first + i;
  return v;
}

// The expected augmented image: flip (x -> w-1-x) first, then out(r, x) = in(r + dy - P, x + dx - P) or 0.
float expected(const Images& im, const Augmentation& aug, const SampleAugmentation& s, int64_t b, int64_t r,
               int64_t x, int64_t ch) {
  if (s.crop) {
    r += s.dy - aug.crop_padding;
    x += s.dx - aug.crop_padding;
    if (r < 0 || r >= im.h || x < 0 || x >= im.w) return 0.0f;
  }
  if (s.flip) x = im.w - 1 - x;
  return im.value(b, r, x, ch);
}

int count_mismatches(const Images& im, const Augmentation& aug, int64_t epoch, const std::vector<int64_t>& indices,
                     Layout layout, const std::vector<float>& out) {
  int bad = 0;
  for (int64_t b = 0; b < im.n; ++b) {
    const SampleAugmentation s = sample_augmentation(aug, epoch, indices[b]);
    for (int64_t r = 0; r < im.h; ++r)
      for (int64_t x = 0; x < im.w; ++x)
        for (int64_t ch = 0; ch < im.c; ++ch)
          if (out[im.offset(layout, b, r, x, ch)] != expected(im, aug, s, b, r, x, ch)) ++bad;
  }
  return bad;
}

}  // namespace

TEST_CASE("augment: a flip mirrors W (not H) in NHWC and NCHW", "[data]") {
  const Images im{2, 3, 5, 2};
  Augmentation aug;
  aug.flip = true;
  aug.flip_prob = 1.0;
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    std::vector<float> x = im.make(layout);
    augment_batch(aug, 1, iota(2).data(), 2, layout, im.h, im.w, im.c, x.data());
    int bad = 0;
    for (int64_t b = 0; b < im.n; ++b)
      for (int64_t r = 0; r < im.h; ++r)
        for (int64_t col = 0; col < im.w; ++col)
          for (int64_t ch = 0; ch < im.c; ++ch)
            if (x[im.offset(layout, b, r, col, ch)] != im.value(b, r, im.w - 1 - col, ch)) ++bad;
    CHECK(bad == 0);
  }
}

TEST_CASE("augment: pad-and-crop shifts by a uniform offset in [0, 2P] and fills zeros", "[data]") {
  const Images im{60, 4, 5, 3};
  Augmentation aug;
  aug.crop = true;
  aug.crop_prob = 1.0;
  aug.crop_padding = 2;
  aug.seed = 42;
  const std::vector<int64_t> indices = iota(60, 1000);
  std::set<int64_t> dys, dxs;
  for (int64_t i : indices) {
    const SampleAugmentation s = sample_augmentation(aug, 3, i);
    CHECK(s.crop);
    dys.insert(s.dy);
    dxs.insert(s.dx);
  }
  CHECK(dys == std::set<int64_t>{0, 1, 2, 3, 4});
  CHECK(dxs == std::set<int64_t>{0, 1, 2, 3, 4});
  for (bool flip : {false, true}) {
    aug.flip = flip;
    aug.flip_prob = 1.0;
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      std::vector<float> x = im.make(layout);
      augment_batch(aug, 3, indices.data(), im.n, layout, im.h, im.w, im.c, x.data());
      CHECK(count_mismatches(im, aug, 3, indices, layout, x) == 0);
    }
  }
  // A padding wider than the image still works (whole rows and columns of zeros).
  aug.crop_padding = 7;
  std::vector<float> x = im.make(Layout::nhwc);
  augment_batch(aug, 3, indices.data(), im.n, Layout::nhwc, im.h, im.w, im.c, x.data());
  CHECK(count_mismatches(im, aug, 3, indices, Layout::nhwc, x) == 0);
}

TEST_CASE("augment: probability 0 changes nothing, 1 every sample, 1/2 about half", "[data]") {
  const Images im{2000, 1, 3, 1};
  const std::vector<int64_t> indices = iota(im.n);
  const std::vector<float> original = im.make(Layout::nhwc);
  Augmentation aug;
  aug.flip = aug.crop = true;
  aug.crop_padding = 1;
  for (double p : {0.0, 1.0, 0.5}) {
    aug.flip_prob = aug.crop_prob = p;
    std::vector<float> x = original;
    augment_batch(aug, 1, indices.data(), im.n, Layout::nhwc, im.h, im.w, im.c, x.data());
    CHECK(count_mismatches(im, aug, 1, indices, Layout::nhwc, x) == 0);
    int flips = 0, crops = 0;
    for (int64_t i : indices) {
      flips += sample_augmentation(aug, 1, i).flip;
      crops += sample_augmentation(aug, 1, i).crop;
    }
    if (p == 0.0) {
      CHECK(x == original);
      CHECK(flips + crops == 0);
    } else if (p == 1.0) {
      CHECK(flips == im.n);
      CHECK(crops == im.n);
    } else {
      CHECK(flips > 900);
      CHECK(flips < 1100);
      CHECK(crops > 900);
      CHECK(crops < 1100);
    }
  }
}

TEST_CASE("augment: decisions depend only on (seed, epoch, index), not on the batch", "[data]") {
  const Images im{3, 4, 4, 2};
  Augmentation aug;
  aug.flip = aug.crop = true;
  const std::vector<int64_t> indices = {5, 9, 2};
  std::vector<float> batch = im.make(Layout::nchw);
  augment_batch(aug, 2, indices.data(), 3, Layout::nchw, im.h, im.w, im.c, batch.data());
  const int64_t size = im.h * im.w * im.c;
  for (int64_t b = 2; b >= 0; --b) {  // the same samples alone, in another order
    std::vector<float> one(batch.size());
    const std::vector<float> all = im.make(Layout::nchw);
    std::copy(all.begin() + b * size, all.begin() + (b + 1) * size, one.begin());
    augment_batch(aug, 2, &indices[b], 1, Layout::nchw, im.h, im.w, im.c, one.data());
    CHECK(std::equal(one.begin(), one.begin() + size, batch.begin() + b * size));
  }
  auto decisions = [&](const Augmentation& a, int64_t epoch) {
    std::vector<int64_t> d;
    for (int64_t i = 0; i < 64; ++i) {
      const SampleAugmentation s = sample_augmentation(a, epoch, i);
      d.insert(d.end(), {s.flip, s.crop, s.dy, s.dx});
    }
    return d;
  };
  CHECK(decisions(aug, 1) == decisions(aug, 1));
  CHECK(decisions(aug, 1) != decisions(aug, 2));
  Augmentation other = aug;
  other.seed = 1;
  CHECK(decisions(aug, 1) != decisions(other, 1));
  // Turning flips off does not move the crop decisions.
  Augmentation crop_only = aug;
  crop_only.flip = false;
  for (int64_t i = 0; i < 64; ++i) {
    CHECK(sample_augmentation(crop_only, 1, i).crop == sample_augmentation(aug, 1, i).crop);
    CHECK(sample_augmentation(crop_only, 1, i).dx == sample_augmentation(aug, 1, i).dx);
  }
  aug.flip_prob = 1.5;
  CHECK(test::throws_dtnn_error([&] { augment_batch(aug, 1, indices.data(), 3, Layout::nchw, 4, 4, 2, batch.data()); }));
}
