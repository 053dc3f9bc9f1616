// The clock every duration in dtnn is measured with.
#pragma once

#include <chrono>

namespace dtnn {

// Seconds on the steady (monotonic) clock since an arbitrary origin: only differences mean anything.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace dtnn
