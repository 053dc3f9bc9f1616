// Data augmentation of training batches: random horizontal flip and pad-and-random-crop.
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
//   - The crop is the standard pad-and-random-crop: zero-pad by P on every side and cut a window of the
//     original size at a uniform offset in [0, 2P]^2, i.e. shift the image by (dy, dx) in [-P, P]^2 and
//     fill the uncovered border with zeros. Zero is in the preprocessed space (the training mean for
//     standardised CIFAR-10, the Caffe mean for ImageNet), as PyDTNN zeroed its corners after
//     preprocessing. PyDTNN's --crop_images_size "crop" (zero two corner rectangles, then roll the image,
//     along C and H in NCHW) is not reproduced.
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
  uint64_t seed = 0;
  bool enabled() const { return flip || crop; }
};

// What augment_batch does to one sample (exposed for tests).
struct SampleAugmentation {
  bool flip = false;
  bool crop = false;
  int64_t dy = 0, dx = 0;  // crop window offset in the padded image, in [0, 2P]
};
SampleAugmentation sample_augmentation(const Augmentation& aug, int64_t epoch, int64_t index);

// Augments count samples of h x w x c floats at x (layout NHWC, NCHW; flat is treated as NHWC), sample b
// being pool index indices[b], in place and without allocating. Throws dtnn::Error for a probability
// outside [0, 1] or a negative padding.
void augment_batch(const Augmentation& aug, int64_t epoch, const int64_t* indices, int64_t count, Layout layout,
                   int64_t h, int64_t w, int64_t c, float* x);

}  // namespace dtnn
