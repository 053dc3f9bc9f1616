// See host.h.
#include "core/host.h"

#include <cstdio>

#include <unistd.h>

namespace dtnn {

std::string host_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) return "unknown";
  return host;
}

std::string capture_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace dtnn
