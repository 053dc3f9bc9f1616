// What the `dtnn ingest` tests share: a scratch directory per test process and one-value queries.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "helpers.h"
#include "results/store.h"
#include "store_value.h"

namespace dtnn::test {

// An empty directory under /tmp, removed with its contents at the end of the test; d / "name" is a path in it.
struct Dir {
  std::filesystem::path path;
  explicit Dir(const std::string& name) : path(temp_path(name)) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Dir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace dtnn::test
