// See init_watchdog.h.
#include "parallel/init_watchdog.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"

namespace dtnn {

double mpi_init_timeout_s() {
  const char* text = std::getenv("DTNN_MPI_INIT_TIMEOUT_S");
  if (!text || !*text) return 120.0;
  const std::optional<double> v = parse_double(text);
  if (!v || !std::isfinite(*v) || *v < 0)
    fail("DTNN_MPI_INIT_TIMEOUT_S: expected a number of seconds >= 0 (0: no bound), got '", text, "'");
  return *v;
}

InitWatchdog::InitWatchdog(double seconds, std::string what) {
  if (!(seconds > 0)) return;
  thread_ = std::thread([this, seconds, what = std::move(what)] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (done_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
    std::ostringstream line;
    line << what << " did not end in " << seconds << " s: a rank of this job never joined it (one that exited "
         << "first, or another program); DTNN_MPI_INIT_TIMEOUT_S sets the bound (0: none)";
    print_error_line(line.str());
    std::_Exit(1);  // the main thread is inside MPI: nothing can unwind it
  });
}

InitWatchdog::~InitWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_one();
  thread_.join();
}

}  // namespace dtnn
