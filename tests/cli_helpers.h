// Running the dtnn binary from a test: exit status, stdout and stderr, and the CLI's error contract
// (one line "dtnn: ..." on stderr and a non-zero exit). DTNN_BINARY is defined by tests/CMakeLists.txt.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "helpers.h"

namespace dtnn::test {

struct Command {
  int status;
  std::string out, err;
};

inline Command run_dtnn(const std::string& args) {
  const std::string out = temp_path("cmd.out"), err = temp_path("cmd.err");
  const int rc = std::system((std::string(DTNN_BINARY) + " " + args + " > " + out + " 2> " + err).c_str());
  Command c{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, "", ""};
  std::ifstream o(out), e(err);
  std::stringstream so, se;
  so << o.rdbuf();
  se << e.rdbuf();
  c.out = so.str();
  c.err = se.str();
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return c;
}

// True when the python statements `asserts` hold for d = numpy.load(npz) in /usr/bin/python3 (the
// interop checks of files dtnn writes; skip first when test::numpy_available() is false, tests/skip.h).
inline bool numpy_holds(const std::string& npz, const std::string& asserts) {
  const std::string py = "/usr/bin/python3 -c \"import numpy as n; d=n.load('" + npz + "'); " + asserts + "\"";
  return std::system(py.c_str()) == 0;
}

// True when `xml` is well-formed JUnit XML with these counts, by tests/analysis/junit_check.py: a checker written
// from the format's description (Ant's JUnit schema, Jenkins' reading of it), not from dtnn's writer.
inline bool junit_holds(const std::string& xml, int tests, int failures, int skipped) {
  const std::string cmd = std::string("/usr/bin/python3 ") + DTNN_SOURCE_DIR + "/tests/analysis/junit_check.py '" +
                          xml + "' --tests " + std::to_string(tests) + " --failures " + std::to_string(failures) +
                          " --skipped " + std::to_string(skipped);
  return std::system(cmd.c_str()) == 0;
}

inline bool one_line_error(const Command& c) {
  return c.status != 0 && c.err.rfind("dtnn: ", 0) == 0 && std::count(c.err.begin(), c.err.end(), '\n') == 1;
}

}  // namespace dtnn::test
