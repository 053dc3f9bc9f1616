#include "train/options.h"

#include "train/option_table.h"

namespace dtnn {

std::string resolved_tensor_format(const TrainOptions& o) {
  if (o.tensor_format == "AUTO" || o.tensor_format == "auto") return o.enable_gpu ? "NCHW" : "NHWC";
  return o.tensor_format;
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
