// A bound on joining an MPI job. MPI_Init (and the first collectives after it) waits for every rank of the
// job; a rank that exits before calling it (a peer program that ends at once, a rank that fails before MPI)
// leaves the others waiting forever, since Open MPI aborts a job only for a non-zero exit. The watchdog ends
// this process with one line and exit 1 when the wait passes its bound, which lets the launcher end the job.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace dtnn {

// The bound: DTNN_MPI_INIT_TIMEOUT_S seconds from the environment (0: wait forever), 120 when unset. Throws
// dtnn::Error for a value that is not a finite number of seconds >= 0.
double mpi_init_timeout_s();

class InitWatchdog {
 public:
  // Starts watching; `seconds` <= 0 watches nothing. `what` names the wait in the line printed at the bound.
  InitWatchdog(double seconds, std::string what);
  ~InitWatchdog();  // the wait ended: stops watching
  InitWatchdog(const InitWatchdog&) = delete;
  InitWatchdog& operator=(const InitWatchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace dtnn
