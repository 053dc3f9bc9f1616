// See source_dir.h.
#include "experiments/source_dir.h"

#include <cstdlib>

namespace dtnn {

std::string source_dir() {
  const char* dir = std::getenv("DTNN_SOURCE_DIR");
  return dir && *dir ? std::string(dir) : std::string(DTNN_SOURCE_DIR);
}

}  // namespace dtnn
