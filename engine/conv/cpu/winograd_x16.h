// cpu.winograd_x16's and cpu.winograd_x16_f4's kernels: Winograd F(MxM,3x3), M = 2 or 4, on NHWC tensors whose
// channel counts are multiples of 16, one 16-float vector per pixel and 16-channel block. The tile code is
// written once (winograd_x16_tiles.h) and compiled twice: in winograd_x16_avx512.cpp (the one file of the
// algorithms compiled with -mavx512f, only where the compiler has it) and in winograd_x16_avx2.cpp (the
// build's baseline), each exporting its Kernels. winograd_x16.cpp calls the
// AVX-512 kernels where convgemm::avx512_kernels() says they run, the AVX2 ones elsewhere; both meet the
// contracts below (the same summation order: results equal up to the compiler's FMA contraction).
//
// A tile is MxM output pixels; its (M+2)x(M+2) input window is transformed (B^T d B), multiplied point by
// point with the transformed filters ((M+2)^2 GEMMs of kTiles tiles x Ci x Ko, the products in float32 FMA
// chains), and transformed back (A^T m A). A block of kTiles tiles keeps its (M+2)^2 x kTiles x (Ci + Ko)
// transformed values in the caller's buffer, so they stay in L1/L2 between the three steps instead of
// streaming the whole batch's transforms through memory.
#pragma once

#include <cstdint>

namespace dtnn::winograd_x16 {

constexpr int kTiles = 8;  // tiles per block: the GEMMs' independent accumulator chains
// Tiles per block of the weight gradient: each block loads and stores the 16 x 16 sums it adds to once per
// point and channel block, so longer blocks spend less of their time there.
constexpr int kFilterTiles = 16;

// Transform points of an F(MxM,3x3) tile: its (M+2)x(M+2) window.
constexpr int points(int m) { return (m + 2) * (m + 2); }

// One stride-1 3x3 correlation out = corr(in, g) + bias, g given as its transform u = G g G^T.
struct Conv {
  const float* in = nullptr;  // [N][h][w][ci]
  int64_t h = 0, w = 0, ci = 0;
  float* out = nullptr;  // [N][p][q][ko], p = h + 2 pad_h - 2
  int64_t p = 0, q = 0, ko = 0;
  int64_t pad_h = 0, pad_w = 0;
  const float* u = nullptr;     // [points][ci][ko]
  const float* bias = nullptr;  // ko floats, or null
  const float* add = nullptr;   // shaped like out, or null: added to each output after the bias
  int64_t n = 0;                // samples: tiles past the batch are not prefetched
  // When not null, every block of kTiles tiles also writes the moments of its output pixels (bias included) to
  // moments + (first / kTiles) * moment_stride(ko) doubles: [mean, ko][sum of squared deviations, ko][pixels].
  double* moments = nullptr;
};

// Doubles of one block's moments (Conv::moments).
inline int64_t moment_stride(int64_t ko) { return 2 * ko + 1; }

// Floats of the buffer one forward_tiles call needs: points x kTiles x (ci + ko); one filter_tiles call:
// points x kFilterTiles x (c + k).
inline int64_t buffer_floats(int m, int64_t ci, int64_t ko) { return int64_t{points(m)} * kTiles * (ci + ko); }
inline int64_t filter_buffer_floats(int m, int64_t c, int64_t k) {
  return int64_t{points(m)} * kFilterTiles * (c + k);
}

// Tiles are numbered over the batch: tile = (n * ceil(p / M) + ty) * ceil(q / M) + tx covers output pixels
// (M ty, M tx) .. (M ty + M - 1, M tx + M - 1) of sample n (those that exist).
// Kernels::forward<M>()(c, first, count, buf): writes the output pixels of tiles [first, first + count),
// count <= kTiles (first a multiple of kTiles), and prefetches into L2 what the next kTiles tiles read (in
// training the activations arrive from memory, not from cache: the inputs, and c.add where given); with
// c.moments, the block's moments too. buf: buffer_floats(M, c.ci, c.ko) floats.
using ForwardTiles = void (*)(const Conv& c, int64_t first, int count, float* buf);

// The weight gradient of a stride-1 3x3 convolution in the transform domain: for every tile of dy (MxM
// pixels), s[pt][c][k] += (B^T x B)[pt][c] (A dy A^T)[pt][k], x's window being the one the forward tile
// reads. dW = G^T s G afterwards (winograd_x16.cpp).
struct Filter {
  const float* x = nullptr;  // [N][h][w][c]
  int64_t h = 0, w = 0, c = 0;
  const float* dy = nullptr;  // [N][p][q][k]
  int64_t p = 0, q = 0, k = 0;
  int64_t pad_h = 0, pad_w = 0;
  int64_t n = 0;  // samples: tiles past the batch are not prefetched
};

// Kernels::filter<M>()(f, first, count, s, buf): adds the contributions of dy's tiles [first, first + count)
// (numbered as above over p x q), count <= kFilterTiles, to s ([points][c][k]); prefetches the next kFilterTiles
// tiles' x and dy into L2. buf: filter_buffer_floats(M, f.c, f.k) floats.
using FilterTiles = void (*)(const Filter& f, int64_t first, int count, float* s, float* buf);

// One instruction set's kernels for both tile sizes.
struct Kernels {
  ForwardTiles forward2, forward4;
  FilterTiles filter2, filter4;
  template <int M>
  ForwardTiles forward() const { return M == 2 ? forward2 : forward4; }
  template <int M>
  FilterTiles filter() const { return M == 2 ? filter2 : filter4; }
};

// The AVX-512 kernels (null where the compiler cannot build them) and the AVX2 ones.
const Kernels* avx512_kernels();
const Kernels& avx2_kernels();

}  // namespace dtnn::winograd_x16
