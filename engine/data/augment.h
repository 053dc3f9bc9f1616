// Data augmentation of training batches: random horizontal flip, and a random crop: dtnn's pad-and-crop, or
// PyDTNN's corner-zeroing roll (--crop_images_size).
//
// Applied by the trainer (through the BatchLoader) to training batches only, after Dataset::load_batch,
// in place on the preprocessed floats; validation and test batches are never augmented, even when the
// validation samples come from the training pool. Each sample's decisions come from an Rng that is a pure
// function of (seed, epoch, pool index), so they do not depend on batch composition, rank count, loader
// thread or anything else: a 2-rank run sees the same augmented samples as a 1-rank run.
//
// Differences from PyDTNN (research notes §6.6):
//   - Per-sample Bernoulli(prob) decisions; PyDTNN flipped/cropped exactly int(N * prob) random images of
//     an augmented copy of the whole training array, once per epoch.
//   - The flip mirrors W in both layouts. PyDTNN flipped axis 2, which is W in NHWC but H in NCHW (a
//     vertical flip there: a bug).
//   - crop_size 0 (dtnn's default): the standard pad-and-random-crop: zero-pad by P on every side and cut a
//     window of the original size at a uniform offset in [0, 2P]^2, i.e. shift the image by (dy, dx) in
//     [-P, P]^2 and fill the uncovered border with zeros. Zero is in the preprocessed space (the training mean
//     for standardised CIFAR-10, the Caffe mean for ImageNet), as PyDTNN zeroed its corners after
//     preprocessing.
//   - crop_size S > 0 (PyDTNN's --crop_images_size, pydtnn/datasets/dataset.py do_crop_images): a window of
//     S x S at rows [t, t+S), columns [l, l+S), t uniform in {0..h-S-1}, l in {0..w-S-1}; the two corner
//     rectangles rows [0, t) x columns [0, l) and rows [t+S, h) x columns [l+S, w) are zeroed (all channels);
//     then the whole image is rolled cyclically (wrapping, as numpy.roll) down by s1 rows, s1 uniform in
//     {-t..h-t-S-1}, and right by s2 columns, s2 in {-l..w-l-S-1}. S must be smaller than h and w (PyDTNN
//     crashes there). In NHWC PyDTNN's rolls act on axes 1 and 2 of an (h, w, c) image, i.e. columns and
//     channels (a colour rotation of 3-channel images); dtnn rolls rows and columns in both layouts, as PyDTNN
//     does in NCHW, so a sample is the same image whatever the tensor format.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace dtnn {

struct Augmentation {
  bool flip = false;
  double flip_prob = 0.5;
  bool crop = false;
  double crop_prob = 0.5;
  int64_t crop_padding = 4;
  int64_t crop_size = 0;  // > 0: PyDTNN's corner-zeroing roll instead of the pad-and-crop
  uint64_t seed = 0;
  bool enabled() const { return flip || crop; }
};

// What augment_batch does to one sample (exposed for tests).
struct SampleAugmentation {
  bool flip = false;
  bool crop = false;
  int64_t dy = 0, dx = 0;  // crop window offset in the padded image, in [0, 2P]
  double u_top = 0, u_left = 0, u_roll_y = 0, u_roll_x = 0;  // PyDTNN's crop: uniforms in [0, 1) for t, l, s1, s2
};
SampleAugmentation sample_augmentation(const Augmentation& aug, int64_t epoch, int64_t index);

// Augments count samples of h x w x c floats at x (layout NHWC, NCHW; flat is treated as NHWC), sample b
// being pool index indices[b], in place and without allocating. Throws dtnn::Error for a probability
// outside [0, 1], a negative padding, or a crop_size not smaller than h and w.
void augment_batch(const Augmentation& aug, int64_t epoch, const int64_t* indices, int64_t count, Layout layout,
                   int64_t h, int64_t w, int64_t c, float* x);

}  // namespace dtnn
