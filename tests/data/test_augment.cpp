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

namespace {

int64_t pick(double u, int64_t n) { return std::min<int64_t>(static_cast<int64_t>(u * static_cast<double>(n)), n - 1); }

// PyDTNN's crop (pydtnn/datasets/dataset.py do_crop_images) written from its definition: zero the corners
// [0,t)x[0,l) and [t+S,h)x[l+S,w) of the (flipped) image, then out(r, x) = in((r - s1) mod h, (x - s2) mod w).
float expected_roll(const Images& im, const Augmentation& aug, const SampleAugmentation& s, int64_t b, int64_t r,
                    int64_t x, int64_t ch) {
  if (s.crop) {
    const int64_t S = aug.crop_size, t = pick(s.u_top, im.h - S), l = pick(s.u_left, im.w - S);
    const int64_t s1 = pick(s.u_roll_y, im.h - S) - t, s2 = pick(s.u_roll_x, im.w - S) - l;
    r = ((r - s1) % im.h + im.h) % im.h;
    x = ((x - s2) % im.w + im.w) % im.w;
    const int64_t fx = s.flip ? im.w - 1 - x : x;  // corners are zeroed after the flip, by position
    if ((r < t && x < l) || (r >= t + S && x >= l + S)) return 0.0f;
    return im.value(b, r, fx, ch);
  }
  return im.value(b, r, s.flip ? im.w - 1 - x : x, ch);
}

}  // namespace

TEST_CASE("augment: --crop_images_size is PyDTNN's corner-zeroing roll, in rows and columns in both layouts",
          "[data]") {
  const Images im{64, 7, 9, 3};
  Augmentation aug;
  aug.crop = aug.flip = true;
  aug.crop_prob = 1.0;
  aug.crop_size = 4;
  aug.seed = 11;
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    for (int64_t epoch : {1, 2}) {
      std::vector<float> x = im.make(layout);
      const std::vector<int64_t> idx = iota(im.n, 100);
      augment_batch(aug, epoch, idx.data(), im.n, layout, im.h, im.w, im.c, x.data());
      int bad = 0;
      for (int64_t b = 0; b < im.n; ++b) {
        const SampleAugmentation s = sample_augmentation(aug, epoch, idx[b]);
        for (int64_t r = 0; r < im.h; ++r)
          for (int64_t c = 0; c < im.w; ++c)
            for (int64_t ch = 0; ch < im.c; ++ch)
              if (x[im.offset(layout, b, r, c, ch)] != expected_roll(im, aug, s, b, r, c, ch)) ++bad;
      }
      CHECK(bad == 0);
    }
  }
  aug.crop_size = 7;  // not smaller than h: PyDTNN crashes (numpy's randint(0, 0)); dtnn says so
  std::vector<float> x = im.make(Layout::nhwc);
  CHECK_THROWS_WITH(augment_batch(aug, 1, iota(1).data(), 1, Layout::nhwc, im.h, im.w, im.c, x.data()),
                    Catch::Contains("--crop_images_size=7 must be smaller than the images' side (7x9)"));
}

TEST_CASE("augment: PyDTNN's own do_crop_images gives the same image for the same draws", "[data]") {
  // The real PyDTNN's do_crop_images on this 2-channel 5x6 NCHW image (values 1 + 100c + 10r + x), crop 2,
  // with numpy's draws forced to t = 1, l = 2, s1 = -1, s2 = 1 (numpy.random.randint patched), printed:
  const std::vector<std::vector<int>> pydtnn = {{16, 11, 12, 13, 14, 15}, {26, 21, 22, 23, 24, 25},
                                                {0, 31, 32, 33, 34, 0},   {0, 41, 42, 43, 44, 0},
                                                {6, 0, 0, 3, 4, 5}};
  Augmentation aug;
  aug.crop = true;
  aug.crop_prob = 1.0;
  aug.crop_size = 2;
  int64_t index = 0;  // a sample whose draws are those: t = pick(u, 3) = 1, l = pick(u, 4) = 2, ...
  for (;; ++index) {
    const SampleAugmentation s = sample_augmentation(aug, 1, index);
    const int64_t t = pick(s.u_top, 3), l = pick(s.u_left, 4);
    if (t == 1 && l == 2 && pick(s.u_roll_y, 3) - t == -1 && pick(s.u_roll_x, 4) - l == 1) break;
    REQUIRE(index < 100000);
  }
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    std::vector<float> x(60);
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t r = 0; r < 5; ++r)
        for (int64_t w = 0; w < 6; ++w)
          x[layout == Layout::nchw ? (c * 5 + r) * 6 + w : (r * 6 + w) * 2 + c] = 1 + 100 * c + 10 * r + w;
    augment_batch(aug, 1, &index, 1, layout, 5, 6, 2, x.data());
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t r = 0; r < 5; ++r)
        for (int64_t w = 0; w < 6; ++w) {
          const int want = pydtnn[r][w] == 0 ? 0 : pydtnn[r][w] + 100 * static_cast<int>(c);
          CHECK(x[layout == Layout::nchw ? (c * 5 + r) * 6 + w : (r * 6 + w) * 2 + c] == want);
        }
  }
}
