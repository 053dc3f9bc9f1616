// What every fuzz target shares (tests/fuzz/README.md): the scratch files the readers read (they take
// paths, so each input is written to a file first), and the rule that tells a refusal from a finding.
//
// A reader may accept an input or refuse it with its documented exception (dtnn::Error, io::NpzError; both
// derive from std::runtime_error and carry one line). Everything else is a finding that stops the fuzzer:
// any other exception (libFuzzer reports it as an uncaught exception), a crash, an ASan/UBSan report, a
// leak, a timeout, more memory than -rss_limit_mb, and a dtnn::Error raised by DTNN_ASSERT: "internal
// error: ..." means bad input reached an invariant that the reader should have checked first.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "io/npz.h"

namespace dtnn::fuzz {

// A private directory under $TMPDIR (ci/fuzz.sh points it at a scratch folder), created on first use and
// removed when the process exits normally.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/dtnn-fuzz-XXXXXX";
    if (!::mkdtemp(templ.data())) {
      std::perror("dtnn fuzz: mkdtemp");
      std::abort();
    }
    static std::string removed_at_exit;
    removed_at_exit = templ;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removed_at_exit, ec);
    });
    return templ;
  }();
  return dir;
}

inline std::string scratch_path(const std::string& name) { return scratch_dir() + "/" + name; }

// Rewrites the scratch file `name` with the input (truncating it: one file per process, reused by every
// iteration) and returns its path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "dtnn fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

// DTNN_FUZZ_VERBOSE=1 prints every refusal (to check that the seeds get past the first checks).
inline void refused(const char* what) {
  static const bool verbose = std::getenv("DTNN_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "dtnn fuzz: refused: %s\n", what);
}

// Runs the reader: a documented refusal returns false, acceptance true; an internal error aborts (above).
template <typename F>
bool accepted(F&& read) {
  try {
    read();
    return true;
  } catch (const Error& e) {
    // DTNN_ASSERT's message starts so; a refusal starts with the file name (and may quote the input).
    if (std::string(e.what()).rfind("internal error: ", 0) == 0) {
      std::fprintf(stderr, "dtnn fuzz: an invariant, not the reader, refused this input: %s\n", e.what());
      std::abort();
    }
    refused(e.what());
  } catch (const io::NpzError& e) {
    refused(e.what());
  }
  return false;
}

// Aborts with the message when a property that must hold for every accepted input does not.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "dtnn fuzz: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace dtnn::fuzz
