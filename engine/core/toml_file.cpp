#include "core/toml_file.h"

#include <vector>

#include "core/error.h"

namespace dtnn {

// toml++ recurses once per level of nesting (a.a.a... = 1, [[[...]]], {a={a=...}}, {a.a.a... = 1}): 50,000
// levels overflow the stack. The scan counts brackets and braces outside
// strings and comments, plus the dots of the dotted key being read (at a line's start, after '{' and after a
// ',' inside braces: the keys of inline tables), and skips single-line and multi-line ("""...""",
// '''...''') strings, which may hold any brackets and dots.
void check_toml_shape(const std::string& text, const std::string& path, const TomlLimits& limits) {
  if (text.size() > limits.max_bytes)
    fail(path, ": ", text.size(), " bytes; ", limits.what, " may have at most ", limits.max_bytes);
  int depth = 0, line = 1, dots = 0, worst = 0, worst_line = 1;
  std::vector<char> open;  // the brackets and braces around the scan
  char quote = 0;          // the quote character of the string the scan is in
  bool triple = false;     // ... a multi-line one
  bool comment = false, key = true;  // key: a key is being read (before its '=')
  const auto starts = [&](size_t i, char q) { return i + 2 < text.size() && text[i + 1] == q && text[i + 2] == q; };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (quote) {
      if (c == '\\' && quote == '"') {
        if (i + 1 < text.size() && text[i + 1] == '\n') ++line;
        ++i;
      } else if (triple && c == quote && starts(i, quote)) {
        quote = 0, triple = false, i += 2;
      } else if (!triple && (c == quote || c == '\n')) {
        quote = 0;  // a single-line string ends at its quote (or, malformed, at the line's end)
        if (c == '\n') comment = false, key = open.empty() || open.back() == '{', dots = 0;
      }
      continue;
    }
    if (c == '\n') {
      comment = false, dots = 0;
      key = open.empty();  // a new line starts a key outside arrays and inline tables
      continue;
    }
    if (comment) continue;
    if (c == '"' || c == '\'') {
      quote = c;
      if (starts(i, c)) triple = true, i += 2;
    } else if (c == '#') {
      comment = true;
    } else if (c == '=') {
      key = false, dots = 0;
    } else if (c == '.' && key) {
      ++dots;
    } else if (c == '[' || c == '{') {
      open.push_back(c);
      ++depth;
      if (c == '{') key = true, dots = 0;
    } else if ((c == ']' || c == '}') && depth > 0) {
      open.pop_back();
      --depth;
    } else if (c == ',' && !open.empty() && open.back() == '{') {
      key = true, dots = 0;
    }
    if (depth + dots > worst) worst = depth + dots, worst_line = line;
  }
  if (worst > limits.max_depth)
    fail(path, ":", worst_line, ": tables, arrays or dotted keys nested more than ", limits.max_depth, " levels deep",
         *limits.needs ? std::string(" (") + limits.needs + ")" : std::string());
}

toml::table parse_toml(const std::string& text, const std::string& path, const TomlLimits& limits) {
  check_toml_shape(text, path, limits);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    if (e.source().begin.line == 0) fail(path, ": ", e.description());
    fail(path, ":", e.source().begin.line, ": ", e.description());
  }
}

}  // namespace dtnn
