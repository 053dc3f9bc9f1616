#include "conv/conv_problem.h"

#include <cerrno>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace dtnn {

const char* conv_dir_name(ConvDir dir) {
  switch (dir) {
    case ConvDir::fwd: return "fwd";
    case ConvDir::bwd_data: return "bwd_data";
    case ConvDir::bwd_filter: return "bwd_filter";
  }
  return "?";
}

Shape ConvProblem::w_shape() const {
  return layout == Layout::nhwc ? Shape{c / groups, r, s, k} : Shape{k, c / groups, r, s};
}

void ConvProblem::validate() const {
  // Bounds first, so that no size computation below (output extent, element counts) can overflow.
  constexpr int64_t kMaxValue = int64_t{1} << 24;
  for (int64_t v : {n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups})
    DTNN_CHECK(v <= kMaxValue, "convolution ", str(), ": every size, stride, padding and dilation must be at most ",
               kMaxValue);
  DTNN_CHECK(n >= 0 && c > 0 && h > 0 && w > 0 && k > 0 && r > 0 && s > 0, "convolution ", str(),
             ": sizes must be positive");
  DTNN_CHECK(stride_h > 0 && stride_w > 0 && dil_h > 0 && dil_w > 0 && pad_h >= 0 && pad_w >= 0,
             "convolution ", str(), ": stride and dilation must be positive, padding non-negative");
  DTNN_CHECK(groups > 0 && c % groups == 0 && k % groups == 0, "convolution ", str(),
             ": groups must divide both input and output channels");
  DTNN_CHECK(layout == Layout::nhwc || layout == Layout::nchw, "convolution needs an NHWC or NCHW layout");
  DTNN_CHECK(p() > 0 && q() > 0, "convolution ", str(), ": the filter (with dilation) does not fit the padded ",
             h, "x", w, " input");
  constexpr double kMaxElements = 68719476736.0;  // 2^36 floats (256 GiB) per operand
  const double x = double(n) * c * h * w, y = double(n) * k * p() * q(), wt = double(k) * (c / groups) * r * s;
  DTNN_CHECK(x <= kMaxElements && y <= kMaxElements && wt <= kMaxElements, "convolution ", str(),
             ": an operand would hold more than 2^36 elements (input ", x, ", output ", y, ", weights ", wt, ")");
}

std::string ConvProblem::str() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "n%lld_c%lldh%lldw%lld_k%lldr%llds%lld_st%lldx%lld_pd%lldx%lld_dl%lldx%lld_g%lld_%s_f32",
                (long long)n, (long long)c, (long long)h, (long long)w, (long long)k, (long long)r, (long long)s,
                (long long)stride_h, (long long)stride_w, (long long)pad_h, (long long)pad_w, (long long)dil_h,
                (long long)dil_w, (long long)groups, layout == Layout::nchw ? "nchw" : "nhwc");
  return buf;
}

ConvProblem ConvProblem::parse(std::string_view text) {
  const std::string s(text);
  ConvProblem p;
  long long v[14];
  char lay[8] = {0};
  char dtype[8] = {0};
  int consumed = 0;
  errno = 0;
  const int got = std::sscanf(s.c_str(), "n%lld_c%lldh%lldw%lld_k%lldr%llds%lld_st%lldx%lld_pd%lldx%lld_dl%lldx%lld_g%lld_%4[a-z]_%3[a-z0-9]%n",
                              &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
                              &v[11], &v[12], &v[13], lay, dtype, &consumed);
  DTNN_CHECK(got == 16 && consumed == static_cast<int>(s.size()), "malformed convolution problem '", s,
             "' (expected e.g. n64_c64h32w32_k64r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32)");
  DTNN_CHECK(errno != ERANGE, "convolution problem '", s, "': a number is out of range");
  DTNN_CHECK(std::string(dtype) == "f32", "convolution problem '", s, "': only f32 is supported");
  p.n = v[0]; p.c = v[1]; p.h = v[2]; p.w = v[3]; p.k = v[4]; p.r = v[5]; p.s = v[6];
  p.stride_h = v[7]; p.stride_w = v[8]; p.pad_h = v[9]; p.pad_w = v[10]; p.dil_h = v[11]; p.dil_w = v[12];
  p.groups = v[13];
  p.layout = parse_layout(lay);
  p.validate();
  return p;
}

double ConvProblem::flops(ConvDir) const {
  // The three directions do the same number of multiply-adds.
  return 2.0 * static_cast<double>(n) * k * p() * q() * (c / groups) * r * s;
}

}  // namespace dtnn
