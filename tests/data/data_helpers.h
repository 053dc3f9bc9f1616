// Helpers of the dataset tests: a scratch directory under the build tree, and error capture.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/error.h"

namespace dtnn::test {

// A fresh directory under <build>/tests/tmp, removed with its contents when the object goes.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& name)
      : path(std::string(DTNN_TEST_TMP_DIR) + "/" + std::to_string(::getpid()) + "_" + name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& file) const { return path + "/" + file; }
};

// The message of the std::exception fn throws ("" when it does not throw).
inline std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// True when fn throws a dtnn::Error (not another exception).
inline bool throws_dtnn_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

}  // namespace dtnn::test
