// The two AVX2/FMA register-tile kernels shared by cpu.convgemm (both layouts), cpu.winograd_* and
// cpu.direct. Both keep a 6 x 16 float tile of the output in twelve ymm registers for a whole reduction and
// read their operands through pointers the caller computed (an im2row transform can live in those
// pointers: convgemm's NHWC forward never writes a patch matrix).
//
// tile_gather  out[i][0:16] = init[0:16] + sum_{t < ntaps} sum_{c < C} rows[6t + i][c] * b[(btap[t]*C + c)*16 + 0:16]
//              i < 6 (convgemm: six output pixels); rows: per tap, six pointers to C contiguous floats (or to
//              a zero row); b: one packed 16-column panel. init may be null (zeros).
// tile_segments  out[i][0:16] = (accumulate ? out : 0) + sum_{segments} sum_{u < count} a[u*astep + i] * b[u*bstep + 0:16]
//              with a = seg.a + a_off, b = seg.b + b_off: a GEMM over the reduction index u, whose row
//              operand a holds MR <= 6 consecutive floats per step and whose column operand b holds 16
//              (convgemm NHWC weight gradient: a = dy's output channels, b = x's input channels; cpu.direct:
//              a = x's channels, b = dy's; convgemm NCHW: a = packed weights, b = an im2col panel).
//              Rows MR..5 of out are written as zeros. kMasked: only nb < 16 columns of b are loaded (the
//              rest read as zero); with accumulate, rows < MR of out are read in all 16 columns.
// `out` has leading dimension ldo; all 6 x 16 entries are written (callers point edge tiles at a scratch tile).
// On CPUs with AVX-512F both run their AVX-512 versions (convgemm_kernels_avx512.cpp: same contracts, another
// summation order) unless the environment sets DTNN_MAX_CPU_ISA=AVX2; avx512_kernels() says which.
#pragma once

#include <cstdint>

namespace dtnn::convgemm {

constexpr int kMR = 6;   // output pixels (forward) or output channels of dy (weight gradient) per tile
constexpr int kNR = 16;  // output channels (forward) or input channels (weight gradient) per tile

struct Segment {
  const float* a;  // first dy element of the run
  const float* b;  // first x element of the run
  int64_t count;   // pixels in the run
};

bool avx512_kernels();

void tile_gather(int ntaps, const float* const* rows, const int* btap, int64_t C, const float* b,
                 const float* init, float* out, int64_t ldo);

template <int MR, bool kMasked>
void tile_segments(const Segment* segs, int nsegs, int64_t a_off, int64_t b_off, int64_t astep, int64_t bstep,
                   int nb, bool accumulate, float* out, int64_t ldo);

// tile_segments with the row count and the column mask chosen at run time (1 <= mr <= 6).
void tile_segments_any(int mr, bool masked, const Segment* segs, int nsegs, int64_t a_off, int64_t b_off,
                       int64_t astep, int64_t bstep, int nb, bool accumulate, float* out, int64_t ldo);

}  // namespace dtnn::convgemm
