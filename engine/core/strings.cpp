// See strings.h.
#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace dtnn {

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string shell_quote(const std::string& text) {
  const auto plain = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr("_./=:,+@%-", c) != nullptr);
  };
  if (!text.empty() && std::all_of(text.begin(), text.end(), plain)) return text;
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::optional<double> parse_double(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  // ERANGE: an overflow (+-HUGE_VAL) is refused; an underflow (a subnormal or a zero) is the value itself.
  if (errno == ERANGE && std::isinf(v)) return std::nullopt;
  return v;
}

double to_double(const std::string& text, const std::string& what) {
  const std::optional<double> v = parse_double(text);
  if (!v) fail(what, ": '", text, "' is not a number");
  return *v;
}

}  // namespace dtnn
