// Small helpers the Google Benchmark suites share for their own flags (taken out of argv before Google
// Benchmark sees them).
#pragma once

#include <sstream>
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

}  // namespace dtnn::suites
