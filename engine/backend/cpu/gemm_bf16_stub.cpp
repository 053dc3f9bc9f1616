// cpu::gemm_bf16 in a build without oneDNN: --dtype=bfloat16 is refused before any layer calls it.
#include "backend/cpu/gemm_bf16.h"

#include "core/error.h"

namespace dtnn::cpu {

void gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
               float*, int64_t) {
  unsupported("bfloat16 GEMM: this dtnn was built without oneDNN");
}

}  // namespace dtnn::cpu
