// Small helpers for NPZ arrays that carry values other than float tensors (checkpoints): f64 and i64
// vectors and text stored as a u8 array, and their checked readers. Readers throw dtnn::Error naming the
// file and the key when an array is missing or has the wrong dtype or size.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/npz.h"

namespace dtnn::io {

using NpyArrayMap = std::map<std::string, NpyArray>;

inline NpyArray make_f64(std::string name, const std::vector<double>& v, std::vector<int64_t> shape = {}) {
  NpyArray a;
  a.name = std::move(name);
  a.dtype = NpyDType::f64;
  a.shape = shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(v.size())} : std::move(shape);
  a.bytes.resize(v.size() * sizeof(double));
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

inline NpyArray make_i64(std::string name, int64_t value) {
  NpyArray a;
  a.name = std::move(name);
  a.dtype = NpyDType::i64;
  a.shape = {};
  a.bytes.resize(sizeof(int64_t));
  std::memcpy(a.bytes.data(), &value, sizeof value);
  return a;
}

inline NpyArray make_text(std::string name, const std::string& text) {
  NpyArray a;
  a.name = std::move(name);
  a.dtype = NpyDType::u8;
  a.shape = {static_cast<int64_t>(text.size())};
  a.bytes.assign(text.begin(), text.end());
  return a;
}

// Throws when any of the n values is NaN or infinite, naming the file, the array and the first such element:
// weights and checkpoints are refused rather than trained from (a run that diverged writes none).
template <typename T>
void require_finite(const T* values, size_t n, const std::string& key, const std::string& path) {
  for (size_t i = 0; i < n; ++i)
    DTNN_CHECK(std::isfinite(values[i]), path, ": array '", key, "' holds ", std::isnan(values[i]) ? "NaN" : "an infinity",
               " (element ", i, "): weights and checkpoints must be finite");
}

// A count stored as a float64 (an epoch, a step, a sample count): a whole number in [0, 2^40], else throws
// naming the file and the array. (A cast of 1e300 or NaN to an integer is undefined behaviour.)
inline int64_t whole_count(double v, const std::string& key, const std::string& path) {
  DTNN_CHECK(std::isfinite(v) && v >= 0 && v <= 1099511627776.0 && v == std::floor(v), path, ": array '", key,
             "' holds ", v, " where a count (a whole number in [0, 2^40]) belongs");
  return static_cast<int64_t>(v);
}

inline const NpyArray& require_array(const NpyArrayMap& arrays, const std::string& key, const std::string& path) {
  const auto it = arrays.find(key);
  DTNN_CHECK(it != arrays.end(), path, ": no array '", key, "'");
  return it->second;
}

inline std::vector<double> read_f64(const NpyArrayMap& arrays, const std::string& key, const std::string& path) {
  const NpyArray& a = require_array(arrays, key, path);
  DTNN_CHECK(a.dtype == NpyDType::f64, path, ": array '", key, "' must be float64");
  std::vector<double> v(static_cast<size_t>(a.numel()));
  if (!v.empty()) std::memcpy(v.data(), a.bytes.data(), v.size() * sizeof(double));
  return v;
}

inline int64_t read_i64(const NpyArrayMap& arrays, const std::string& key, const std::string& path) {
  const NpyArray& a = require_array(arrays, key, path);
  DTNN_CHECK(a.dtype == NpyDType::i64 && a.numel() == 1, path, ": array '", key, "' must be one int64");
  int64_t v;
  std::memcpy(&v, a.bytes.data(), sizeof v);
  return v;
}

inline std::string read_text(const NpyArrayMap& arrays, const std::string& key, const std::string& path) {
  const NpyArray& a = require_array(arrays, key, path);
  DTNN_CHECK(a.dtype == NpyDType::u8, path, ": array '", key, "' must be uint8 text");
  return std::string(a.bytes.begin(), a.bytes.end());
}

// Copies exactly n floats of an f32 array into dst; throws when the dtype or size differ.
inline void read_f32_into(const NpyArrayMap& arrays, const std::string& key, const std::string& path, float* dst,
                          int64_t n) {
  const NpyArray& a = require_array(arrays, key, path);
  DTNN_CHECK(a.dtype == NpyDType::f32 && a.numel() == n, path, ": array '", key, "' must hold ", n,
             " float32 values (has ", a.numel(), ")");
  if (n > 0) std::memcpy(dst, a.bytes.data(), static_cast<size_t>(n) * sizeof(float));
}

}  // namespace dtnn::io
