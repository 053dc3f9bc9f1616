#include "train/options.h"

#include <charconv>

#include "core/error.h"
#include "train/option_table.h"

namespace dtnn {

std::string resolved_tensor_format(const TrainOptions& o) {
  if (o.tensor_format == "AUTO" || o.tensor_format == "auto") return o.enable_gpu ? "NCHW" : "NHWC";
  return o.tensor_format;
}

Straggler parse_straggler(const std::string& text) {
  Straggler s;
  if (text.empty()) return s;
  const size_t colon = text.find(':');
  const char* b = text.data();
  const char* e = b + text.size();
  int64_t rank = -1, ms = -1;
  const bool ok = colon != std::string::npos && std::from_chars(b, b + colon, rank).ptr == b + colon &&
                  std::from_chars(b + colon + 1, e, ms).ptr == e && colon > 0 && colon + 1 < text.size() &&
                  rank >= 0 && rank < (int64_t{1} << 24) && ms >= 0 && ms <= 3600 * 1000;
  DTNN_CHECK(ok, "expected RANK:MILLISECONDS (e.g. 1:50; rank >= 0, at most an hour), got '", text, "'");
  s.rank = static_cast<int>(rank);
  s.ms = ms;
  return s;
}

std::vector<std::pair<std::string, std::string>> options_list(const TrainOptions& o) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const OptionSpec& s : train_option_table()) {
    if (s.flags & kOptPlanned) continue;
    const std::string name = s.name;
    out.emplace_back(name, name == "tensor_format" ? resolved_tensor_format(o) : option_text(s, o));
  }
  return out;
}

}  // namespace dtnn
