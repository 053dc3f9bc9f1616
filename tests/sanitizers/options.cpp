// Default options of the sanitizer runtimes for every executable of a DTNN_SANITIZE or DTNN_FUZZ build
// (linked into executables only; see the top-level CMakeLists.txt). ASAN_OPTIONS, LSAN_OPTIONS and
// UBSAN_OPTIONS in the environment still override them.
//
// Why these: leaks are findings (detect_leaks), but the leak checker must skip what third-party runtimes
// keep for the life of the process on purpose; those are listed, each with its reason, in the committed
// suppression file (no blanket off switch). UBSan findings abort with a stack trace, so a ctest run or a
// fuzz run fails on the first one instead of printing a warning nobody reads.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace {

// Whether a NUL-separated /proc/self file (environ, cmdline) has an entry starting with `prefix`. The
// runtimes ask for their options before libc is initialised, when getenv still sees nothing: the file is
// read with raw system calls.
bool proc_entry(const char* file, const char* prefix) {
  static char buf[1 << 16];
  const long fd = syscall(SYS_open, file, O_RDONLY);
  if (fd < 0) return false;
  const long n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
  syscall(SYS_close, fd);
  for (long i = 0; i < n; i += static_cast<long>(std::strlen(buf + i)) + 1)
    if (std::strncmp(buf + i, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

// A process that initialises Open MPI: a rank mpirun started (it sets OMPI_COMM_WORLD_SIZE), or `dtnn train
// --parallel=data` started alone (an MPI singleton).
bool runs_open_mpi() {
  return proc_entry("/proc/self/environ", "OMPI_COMM_WORLD_SIZE=") || proc_entry("/proc/self/cmdline", "--parallel=data");
}

}  // namespace

extern "C" {

// Defined (true) by an executable whose operator new and delete are malloc and free (dtnn_tests:
// tests/support/alloc_count.cpp counts allocations). ASan's new/delete pairing check then reports blocks its own
// operator new handed out (before main, to the C++ runtime) being released by that delete's free: a
// mismatch of the test harness's making, and one it cannot see in dtnn's code (every new there is malloc).
// The check is off in such an executable only.
__attribute__((weak)) bool dtnn_replaces_operator_new();

// Except in processes that run Open MPI: it dlopens its components and dlcloses them in MPI_Finalize, so what
// they keep until exit is reported with "<unknown module>" frames that no suppression can name. Leak
// checking is off in those processes only; ASan's memory errors and UBSan stay on there, and every other
// process (the runner that starts mpirun included) checks leaks.
const char* __asan_default_options() {
  const bool replaced = dtnn_replaces_operator_new != nullptr && dtnn_replaces_operator_new();
  if (runs_open_mpi())
    return replaced ? "detect_leaks=0:check_initialization_order=1:alloc_dealloc_mismatch=0"
                    : "detect_leaks=0:check_initialization_order=1";
  return replaced ? "detect_leaks=1:check_initialization_order=1:alloc_dealloc_mismatch=0"
                  : "detect_leaks=1:check_initialization_order=1";
}

const char* __lsan_default_options() { return "suppressions=" DTNN_LSAN_SUPPRESSIONS ":print_suppressions=0"; }

const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

}  // extern "C"
