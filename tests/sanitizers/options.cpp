// Default options of the sanitizer runtimes for every executable of a DTNN_SANITIZE or DTNN_FUZZ build
// (linked into executables only; see the top-level CMakeLists.txt). ASAN_OPTIONS, LSAN_OPTIONS and
// UBSAN_OPTIONS in the environment still override them.
//
// Why these: leaks are findings (detect_leaks), but the leak checker must skip what third-party runtimes
// keep for the life of the process on purpose; those are listed, each with its reason, in the committed
// suppression file (no blanket off switch). UBSan findings abort with a stack trace, so a ctest run or a
// fuzz run fails on the first one instead of printing a warning nobody reads.
extern "C" {

const char* __asan_default_options() { return "detect_leaks=1:check_initialization_order=1"; }

const char* __lsan_default_options() { return "suppressions=" DTNN_LSAN_SUPPRESSIONS ":print_suppressions=0"; }

const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

}  // extern "C"
