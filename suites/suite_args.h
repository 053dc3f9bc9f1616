// Small helpers the Google Benchmark suites share for their own flags (taken out of argv before Google
// Benchmark sees them). A bad value is one line on stderr and exit 2 (usage_error), never an exception that
// aborts the suite halfway through its JSON.
#pragma once

#include <charconv>
#include <climits>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtnn::suites {

// "a,b,,c" -> {"a", "b", "c"}
inline std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// What a suite's main catches, prints after "<suite>: " and exits 2 on.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole text as an integer in [lo, hi] ("1x", "abc", "" and out-of-range values are refused, naming the flag).
inline int64_t integer_flag(const std::string& flag, const std::string& text, int64_t lo, int64_t hi = INT_MAX) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || v < lo || v > hi)
    throw UsageError(flag + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     ", got '" + text + "'");
  return v;
}

// True/False in PyDTNN's and the CLI's spellings (True, true, 1 / False, false, 0); anything else is refused.
inline bool boolean_flag(const std::string& flag, const std::string& text) {
  if (text == "True" || text == "true" || text == "1") return true;
  if (text == "False" || text == "false" || text == "0") return false;
  throw UsageError(flag + ": expected True or False, got '" + text + "'");
}

}  // namespace dtnn::suites
