// Parsing a JSON document dtnn did not necessarily write (a file a user names: benchmark output, run
// reports, step profiles) with one readable line when it is not JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace dtnn {

// `text` as JSON. Throws dtnn::Error "<where>: empty, not JSON" for a text of only white space (an empty
// file: nlohmann's message, "unexpected end of input; expected '[', '{', or a literal", did not say so),
// else "<where>: not JSON (at line L, column C: <reason>)" without nlohmann's "[json.exception...]" prefix.
inline nlohmann::json parse_json(const std::string& text, const std::string& where) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) fail(where, ": empty, not JSON");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string reason = e.what();
    const std::string::size_type at = reason.find(" at line ");
    if (reason.rfind("[json.exception.", 0) == 0 && at != std::string::npos) reason = reason.substr(at + 1);
    fail(where, ": not JSON (", reason, ")");
  }
}

}  // namespace dtnn
