// Small string helpers shared by the engine, the results store and the harness.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn {

// The items with `sep` between them: join({"a", "b"}, ", ") == "a, b".
std::string join(const std::vector<std::string>& items, std::string_view sep);

// The shortest text that reads back as the same double (std::to_chars): 0.001 -> "0.001", 1.0 -> "1",
// 300 -> "300", 1e-7 -> "1e-07". Independent of the locale.
std::string format_double(double v);

// A number written as text (an SQLite REAL or INTEGER read as text, a JSON or TOML number): the whole of `text`
// as a double, subnormals included (std::stod throws out_of_range for 5e-324); nullopt when `text` is not one
// whole number or lies beyond the double range.
std::optional<double> parse_double(const std::string& text);
// The same, throwing dtnn::Error "<what>: '<text>' is not a number" instead of nullopt.
double to_double(const std::string& text, const std::string& what);

// `text` as one word for a POSIX shell: unchanged when it is made only of characters no shell treats
// specially ([A-Za-z0-9_./=:,+@%-], not empty), else single-quoted with each ' written as '\''.
std::string shell_quote(const std::string& text);

}  // namespace dtnn
