// ConvProblem: one 2-D convolution as plain data, with one canonical string form.
//
// The string (str()/parse()) names the same problem everywhere: a test case, a benchmark, a results row,
// a `dtnn conv` reproducer, e.g. "n64_c64h32w32_k64r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32".
//
// Tensors (float32, row-major):
//   x  activation  NHWC (N, H, W, C)        | NCHW (N, C, H, W)
//   y  activation  NHWC (N, P, Q, K)        | NCHW (N, K, P, Q)
//   w  weights     NHWC (C/G, R, S, K)      | NCHW (K, C/G, R, S)    (PyDTNN's CPU weight layouts)
// Padding is symmetric zero padding; P = (H + 2*pad_h - dil_h*(R-1) - 1) / stride_h + 1 (floor).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tensor/tensor.h"

namespace dtnn {

enum class ConvDir { fwd, bwd_data, bwd_filter };
const char* conv_dir_name(ConvDir dir);  // "fwd", "bwd_data", "bwd_filter"

struct ConvProblem {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 1, r = 1, s = 1;         // output channels, filter height, filter width
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  Layout layout = Layout::nhwc;

  // Output size; 0 (not a negative-truncated 1) when the dilated filter does not fit the padded input.
  int64_t p() const { return out_size(h, pad_h, dil_h, r, stride_h); }
  int64_t q() const { return out_size(w, pad_w, dil_w, s, stride_w); }
  static int64_t out_size(int64_t in, int64_t pad, int64_t dil, int64_t filter, int64_t stride) {
    const int64_t span = in + 2 * pad - dil * (filter - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
  }
  int64_t x_numel() const { return n * c * h * w; }
  int64_t y_numel() const { return n * k * p() * q(); }
  int64_t w_numel() const { return k * (c / groups) * r * s; }
  Shape x_shape() const { return activation_shape(layout, n, c, h, w); }
  Shape y_shape() const { return activation_shape(layout, n, k, p(), q()); }
  Shape w_shape() const;

  // Throws dtnn::Error naming what is impossible (non-positive sizes, empty output, groups not dividing).
  void validate() const;
  std::string str() const;
  static ConvProblem parse(std::string_view text);  // throws dtnn::Error on malformed text
  double flops(ConvDir dir) const;                  // multiply-adds counted as 2 FLOP
  ConvProblem with_batch(int64_t batch) const { ConvProblem q = *this; q.n = batch; return q; }
  bool operator==(const ConvProblem& o) const { return str() == o.str(); }
};

// Index of weight element (k, cg, r, s) in the layout's weight order (cg = channel within the group).
inline int64_t conv_weight_index(const ConvProblem& p, int64_t k, int64_t cg, int64_t r, int64_t s) {
  const int64_t cpg = p.c / p.groups;
  return p.layout == Layout::nhwc ? ((cg * p.r + r) * p.s + s) * p.k + k : ((k * cpg + cg) * p.r + r) * p.s + s;
}

// Index of activation element (n, c, h, w) of an (N, C, H, W)-sized tensor in the given layout.
inline int64_t act_index(Layout layout, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h,
                         int64_t w) {
  return layout == Layout::nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

}  // namespace dtnn
