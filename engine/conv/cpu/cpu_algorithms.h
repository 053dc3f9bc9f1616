// The CPU convolution algorithms, one file each; the registry lists them in preference order.
#pragma once

#include <string>

#include "conv/conv_algorithm.h"

namespace dtnn {

const ConvAlgorithm& conv_convgemm();     // both layouts: implicit GEMM, own AVX2 tiles, OpenMP threads
const ConvAlgorithm& conv_winograd_f2();  // NHWC 3x3 stride 1: F(2x2,3x3)
const ConvAlgorithm& conv_winograd_f4();  // NHWC 3x3 stride 1: F(4x4,3x3)
const ConvAlgorithm& conv_winograd_x16();  // NHWC 3x3 stride 1, C and K multiples of 16 (AVX-512 or AVX2): F(2x2,3x3)
const ConvAlgorithm& conv_winograd_x16_f4();  // the same domain: F(4x4,3x3)
const ConvAlgorithm& conv_im2row_gemm();  // NHWC: im2row (chunked, cache-sized) + OpenBLAS sgemm
const ConvAlgorithm& conv_im2col_gemm();  // NCHW: per-sample im2col + OpenBLAS sgemm
const ConvAlgorithm& conv_depthwise();    // depthwise (groups == C), both layouts: direct loops
const ConvAlgorithm& conv_direct();       // NHWC, any groups: vectorised direct loops, no workspace
const ConvAlgorithm& conv_onednn();       // oneDNN 2.6 primitives, both layouts, groups
// oneDNN's float32 Winograd F(4x4,3x3) (AVX-512; 3x3, stride 1, no groups, channels in multiples of 16), the
// activations reordered to and from oneDNN's blocked layout around each call.
const ConvAlgorithm& conv_onednn_winograd();
// The same primitives multiplying in bfloat16 (float32 in and out, float32 accumulation): --dtype=bfloat16's
// convolutions. Not in conv_algorithms(): no float32 choice (a fallback, best_of, "all") may pick it.
const ConvAlgorithm& conv_onednn_bf16();
// Empty when oneDNN runs bfloat16 natively here (AVX512-BF16 or AMX-BF16, as oneDNN's effective ISA says:
// ONEDNN_MAX_CPU_ISA caps it); otherwise why not, in one sentence. Builds without oneDNN say so.
std::string cpu_bf16_support();
// oneDNN's effective CPU ISA ("avx512_core_bf16"), or "not built".
std::string onednn_isa_name();
// "2.6.3"; in builds without oneDNN (DTNN_ONEDNN=OFF, onednn_stub.cpp) conv_onednn() declines every
// problem and this returns "not built".
std::string onednn_version();
const ConvAlgorithm& conv_reference();    // every problem, double accumulation (the oracle)
// The register tiles dtnn's own algorithms run on this CPU: "AVX-512", or "AVX2" (also when the environment
// sets DTNN_MAX_CPU_ISA=AVX2).
std::string cpu_kernel_isa();

}  // namespace dtnn
