// What a process runs on: machine, build and library versions. The run report, the results store's
// environments and the conv_algo cache key all read this one description.
//
// Compiled into dtnn_engine, not dtnn_core: it asks the backends (BLAS, oneDNN, CUDA, MPI) for their
// versions.
#pragma once

#include <string>

#include "core/machine.h"

namespace dtnn {

struct Environment {
  std::string host;          // host name
  std::string cpu_model;     // /proc/cpuinfo "model name" of the first processor, "" if unreadable
  std::string cpu_id;        // cpu_model plus "(family F model M stepping S)": tells CPU revisions apart
  int cores = 0;             // std::thread::hardware_concurrency()
  MachineIdentity machine;   // vendor, family/model/stepping, ISA, core/cache counts, kernel, hypervisor
  std::string compiler;      // "g++ 12.2.0" / "clang ..."
  std::string build_type;    // "Release" (NDEBUG) or "Debug"
  std::string dtnn_version;  // the CMake project version
  std::string blas, onednn;  // library versions ("not built" for oneDNN without it)
  std::string mpi;           // the MPI library's version string, "" in a build without MPI
  std::string cuda;          // CUDA/cuDNN/NCCL versions, or why there is no GPU backend
  // The binary's provenance (core/build_info.h): the commit it was built from ("unknown" outside a
  // checkout), whether that tree had changes, and its build flags.
  std::string build_commit;
  bool build_dirty = false;
  std::string build_flags;
};

// Captured on the first call (reads /proc/cpuinfo and asks the libraries), then the same object for the
// life of the process. Callable before MPI_Init and from any thread.
const Environment& environment();

}  // namespace dtnn
