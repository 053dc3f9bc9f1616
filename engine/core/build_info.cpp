// See build_info.h (build_info() itself is generated: engine/core/build_info.cmake).
#include "core/build_info.h"

namespace dtnn {

std::string build_commit_label() {
  const BuildInfo& b = build_info();
  return b.commit + (b.dirty ? "+dirty" : "");
}

}  // namespace dtnn
