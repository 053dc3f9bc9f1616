// bfloat16 numbers as dtnn moves them itself (the gradient sum over ranks with --allreduce_dtype=bfloat16):
// the upper 16 bits of a float32, rounded to nearest, ties to even, as oneDNN and PyTorch round. NaN stays a
// (quiet) NaN and infinities stay infinite; finite values past bf16's largest round to infinity, as IEEE says.
#pragma once

#include <cstdint>
#include <cstring>

namespace dtnn {

inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN: keep it quiet
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// dst[i] = to_bf16(src[i]) / from_bf16(src[i]) for i < n (loops the compiler vectorises).
inline void round_to_bf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}
inline void widen_from_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = from_bf16(src[i]);
}

}  // namespace dtnn
