// See host.h.
#include "core/host.h"

#include <unistd.h>

namespace dtnn {

std::string host_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) return "unknown";
  return host;
}

}  // namespace dtnn
