// See error.h.
#include "core/error.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

namespace dtnn {

void print_error_line(const std::string& what) {
  // stdout first: to a file it is block-buffered, and a log holding both streams got the error line in the middle
  // of a half-flushed stdout line, where nothing reading the log for "dtnn: " at a line's start found it.
  std::cout.flush();
  std::fflush(stdout);
  const std::string line = (what.rfind("dtnn: ", 0) == 0 ? "" : "dtnn: ") + what + "\n";
  for (size_t done = 0; done < line.size();) {  // one write unless the pipe takes it in parts
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to report that stderr failed
    done += static_cast<size_t>(n);
  }
}

}  // namespace dtnn
