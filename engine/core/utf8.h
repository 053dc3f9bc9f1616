// Text from bytes: a path on Linux is any bytes but '/' and NUL, while JSON documents, the results store and
// Python's readers need valid UTF-8. Valid sequences pass unchanged; every other byte is shown "\xNN", so a
// path with a 0xFF byte stays readable, and two such paths stay distinct.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dtnn {

// The length of the valid UTF-8 sequence at s[0, n) (1 to 4), or 0 when s[0] starts none: overlong forms,
// surrogates and code points past U+10FFFF are invalid.
std::size_t utf8_sequence(const unsigned char* s, std::size_t n);

// `bytes` as valid UTF-8, each byte outside a valid sequence written "\xNN" (lower-case hex).
std::string escape_invalid_utf8(std::string_view bytes);

// Every string and object key of `j` so escaped, in place: what a JSON document is made of before it is dumped
// (nlohmann's dump throws on invalid UTF-8, and a run report carries the paths it was given).
void escape_invalid_utf8(nlohmann::json& j);

}  // namespace dtnn
