// What a matrix parameter is (experiments/matrix_params.cpp): the `dtnn train` options of the option table
// that a matrix may set, the matrix's own parameters (ranks, device, framework), how a value of each is
// described in errors, where relative paths resolve, and the limits checked before a matrix is parsed or
// expanded. Internal to the harness: matrix.cpp parses, the runner resolves paths; matrix.h is the contract.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/toml_file.h"
#include "train/option_table.h"

namespace dtnn::matrix_detail {

inline constexpr uint64_t kMaxTrials = 100000;      // axes product plus includes (documented in matrix.h)
inline constexpr size_t kMaxMatrixBytes = 4u << 20;  // 4 MiB
inline constexpr int kMaxMatrixDepth = 32;           // levels of tables, arrays and dotted keys

enum class Kind { integer, number, boolean, string, choice };

struct Spec {
  std::string name;
  Kind kind;
  int64_t min = 0;  // integers only
  int64_t max = INT64_MAX;
  // choice only (the matrix's own parameters): the canonical form of a valid value, or throws dtnn::Error.
  std::string (*canonical)(const std::string&) = nullptr;
  // A `dtnn train` option: its row of the option table, whose parser has the last word on a value.
  const OptionSpec* option = nullptr;
};

const std::vector<Spec>& option_specs();  // the option table's kOptMatrix rows, in its order
const std::vector<Spec>& matrix_specs();  // ranks, device, framework
const Spec* find_spec(const std::string& name);  // nullptr when neither
// What a value of this kind is, singular ("a positive integer") or plural ("positive integers").
std::string expectation(const Spec& s, bool plural);

// The guards of a matrix file (core/toml_file.h): kMaxMatrixBytes, kMaxMatrixDepth.
inline constexpr TomlLimits kMatrixToml{kMaxMatrixBytes, kMaxMatrixDepth, "a matrix file", "a matrix needs three"};

}  // namespace dtnn::matrix_detail
