// Pooling, the problem every backend's pool_forward/pool_backward takes (backend/cpu/pool.h,
// backend/gpu_ops.h): one geometry struct, host or device pointers by backend, same argument order.
//
// Semantics (PyDTNN's, identical on every backend):
//  - a window is r x s taps, tap (i, j) of output (oh, ow) at input row oh*sh - ph + i*dh, column
//    ow*sw - pw + j*dw; the caller computes p and q (conv/conv_problem.h's out_size);
//  - padded positions never win a max and are not counted in an average (count_include_pad = false);
//  - max: strict '>' scan in (i, j) order starting from the first in-bounds tap, so the first maximum
//    wins (and a leading NaN stays); backward routes dy to it;
//  - a window that lies entirely in padding outputs 0 and passes no gradient.
#pragma once

#include <cstdint>

#include "core/layout.h"

namespace dtnn {

// Per-sample sizes: input c x h x w, window r x s, output c x p x q; stride (sh, sw), padding (ph, pw),
// dilation (dh, dw). layout is nhwc or nchw and applies to x, y, dx and dy alike.
struct PoolGeometry {
  bool max = true;  // false: average pooling
  Layout layout = Layout::nhwc;
  int64_t c = 1, h = 1, w = 1, r = 1, s = 1, p = 1, q = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

// The argmax buffer of max pooling: n * c * p * q int32 per batch, written by a backend's pool_forward
// and read by the same backend's pool_backward. Its encoding is that backend's own (the CPU stores
// offsets into the whole batch, the GPU offsets within one sample's H*W plane); -1 marks an empty window.

}  // namespace dtnn
