#include "core/utf8.h"

#include <cstdint>
#include <cstdio>
#include <utility>

namespace dtnn {

std::size_t utf8_sequence(const unsigned char* s, std::size_t n) {
  if (n == 0) return 0;
  const unsigned char c = s[0];
  const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || len > n) return 0;
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
  for (std::size_t k = 1; k < len; ++k) {
    if ((s[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3Fu);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::string escape_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < bytes.size();) {
    if (const std::size_t len = utf8_sequence(s + i, bytes.size() - i)) {
      out.append(bytes.substr(i, len));
      i += len;
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", s[i]);
    out += hex;
    ++i;
  }
  return out;
}

void escape_invalid_utf8(nlohmann::json& j) {
  if (j.is_string()) {
    std::string& text = j.get_ref<std::string&>();
    text = escape_invalid_utf8(text);
  } else if (j.is_array()) {
    for (nlohmann::json& item : j) escape_invalid_utf8(item);
  } else if (j.is_object()) {
    nlohmann::json fixed = nlohmann::json::object();
    for (auto& [key, value] : j.items()) {
      escape_invalid_utf8(value);
      fixed[escape_invalid_utf8(key)] = std::move(value);
    }
    j = std::move(fixed);
  }
}

}  // namespace dtnn
