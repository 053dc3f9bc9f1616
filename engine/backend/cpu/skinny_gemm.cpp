// AVX2/FMA kernels for skinny row-major SGEMMs (see skinny_gemm.h for the contract), one file per operand
// layout, each opening with its register blocking: skinny_gemm_nn.cpp, skinny_gemm_nt.cpp,
// skinny_gemm_tn.cpp. The vector wrappers they share (V4 / V8) are in skinny_gemm_vec.h.
//
// Register blocking: R rows x NV vectors of accumulators, about 8-12 of them to cover 2 FMA pipes x
// 4 cycles of latency; fewer when a small block is unrolled over independent accumulator sets.
// Partial vectors are read with maskload and written lane-exactly (xmm / 64-bit / scalar stores, no
// vmaskmovps stores), so nothing outside the matrices is touched. Operands are repacked into fixed
// stack buffers (<= 32 KiB), in blocks of 512 along k where needed; no heap allocation.
#include "backend/cpu/skinny_gemm.h"

namespace dtnn::cpu {

bool skinny_supported(int64_t n) { return n >= 1 && n <= 16; }

}  // namespace dtnn::cpu
