// Errors and check macros.
//
// Every user-facing failure is a dtnn::Error whose what() is one line naming the input and what is wrong;
// the CLI prints "dtnn: <what>" and exits non-zero. Internal invariants use DTNN_ASSERT, which also throws
// (never aborts), naming the expression, file and line. External library calls are wrapped in their
// library's check macro (DTNN_MPI_CHECK, ...), defined next to the code that uses the library.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace dtnn {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A valid request this build or machine cannot carry out (no GPU, an algorithm that declines a problem when
// it was named explicitly). `dtnn train` exits with kUnsupportedExit, and the harness records the run as
// 'unsupported' with the message instead of 'failed'.
struct Unsupported : Error {
  using Error::Error;
};
inline constexpr int kUnsupportedExit = 3;

// `dtnn train` whose training loss became NaN or infinite (train/run.h): it still writes its report, with
// "status": "diverged", and the harness stores the run as 'diverged', not 'ok' and not 'failed'.
inline constexpr int kDivergedExit = 4;

// The line a std::bad_alloc becomes ("out of memory: ..."), and the one line any exception is printed as:
// "dtnn: <what>" (what() already starting with "dtnn: " is not prefixed twice).
inline constexpr const char* kOutOfMemoryLine =
    "out of memory: a size (--batch_size, a convolution's dimensions, --threads) or a file's declared "
    "contents need more memory than this machine has";

// Prints "dtnn: <what>\n" on stderr ("dtnn: " not doubled) in one write(2): the ranks of an mpirun job
// share one stderr, and a line written in three pieces (prefix, message, newline) came out interleaved with
// another rank's ("dtnn: dtnn: 1 rank does not ...").
void print_error_line(const std::string& what);

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Throws dtnn::Error with the concatenation of the arguments.
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(detail::concat(args...));
}

template <typename... Args>
[[noreturn]] void unsupported(const Args&... args) {
  throw Unsupported(detail::concat(args...));
}

}  // namespace dtnn

#define DTNN_CHECK(cond, ...)                       \
  do {                                              \
    if (!(cond)) ::dtnn::fail(__VA_ARGS__);         \
  } while (0)

#define DTNN_ASSERT(cond)                                                                      \
  do {                                                                                         \
    if (!(cond)) ::dtnn::fail("internal error: ", #cond, " failed at ", __FILE__, ":", __LINE__); \
  } while (0)
