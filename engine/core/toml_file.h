// Parsing a TOML file dtnn reads (experiment matrices, accuracy targets) with guards that hold whatever the
// file holds: a size cap, and a nesting cap checked before toml++ sees the text (toml++ recurses once per level
// of tables, arrays and dotted keys: 50,000 levels overflow the stack). Every TOML file dtnn reads goes through
// parse_toml.
#pragma once

#include <cstddef>
#include <string>

#include <toml++/toml.h>

namespace dtnn {

struct TomlLimits {
  std::size_t max_bytes = 4u << 20;  // 4 MiB
  int max_depth = 32;                // levels of tables, arrays and dotted keys
  const char* what = "a TOML file";  // "a matrix file": the refusals name it
  const char* needs = "";            // what such a file needs, said beside a refusal ("a matrix needs three")
};

// `text` (from `path`) as a TOML table. Throws dtnn::Error "<path>: <n> bytes; <what> may have at most <max>",
// "<path>:<line>: tables, arrays or dotted keys nested more than <depth> levels deep (<needs>)", or
// "<path>:<line>: <toml++'s description>".
toml::table parse_toml(const std::string& text, const std::string& path, const TomlLimits& limits);

// The depth check alone (parse_toml runs it first): the brackets and braces outside strings and comments, plus
// the dots of the dotted key being read.
void check_toml_shape(const std::string& text, const std::string& path, const TomlLimits& limits);

}  // namespace dtnn
