// Skipping a test out loud: a test that cannot run here (no CUDA device, no numpy, one GPU for two ranks)
// is reported by ctest as "Skipped" with its reason, never as passed.
//
// ctest counts a test whose process exits with kSkipExit (77) as skipped: every test that may skip has
// SKIP_RETURN_CODE 77 (tests/CMakeLists.txt). Catch2 v2 has no SKIP, so a Catch2 case that cannot run
// calls DTNN_SKIP(reason) first, before any assertion (exiting after a failed CHECK would hide it). ctest
// runs each discovered case in its own process with DTNN_TEST_SKIP_EXIT=1 set: the process prints
// "SKIPPED: reason" on stderr and exits 77. Run by hand (many cases in one process, no such variable) the
// case prints the same line and returns, and the binary's other cases run on.
// Plain test programs (one test per process) print the reason and return kSkipExit from main.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dtnn::test {

constexpr int kSkipExit = 77;

// The interop checks' interpreter: /usr/bin/python3 (what users run), with numpy importable.
inline bool numpy_available() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}
inline constexpr const char* kNoNumpy = "numpy not available (/usr/bin/python3 cannot import numpy)";

inline void skip(const std::string& reason) {
  std::fprintf(stderr, "SKIPPED: %s\n", reason.c_str());
  const char* exit_code = std::getenv("DTNN_TEST_SKIP_EXIT");
  if (exit_code && std::string(exit_code) == "1") {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(kSkipExit);  // no static destructors: the CUDA and MPI runtimes may be half set up
  }
}

}  // namespace dtnn::test

// For a Catch2 case (returns from it when run by hand).
#define DTNN_SKIP(reason)            \
  do {                               \
    ::dtnn::test::skip(reason);      \
    return;                          \
  } while (false)
