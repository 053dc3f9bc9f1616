// Where dtnn finds the repository's files it reads or runs at run time (analysis/targets.toml, the PyTorch
// reference experiments/reference/torch_train.py, analysis/plots/report.py, the SimGrid replay and platforms).
#pragma once

#include <string>

namespace dtnn {

// $DTNN_SOURCE_DIR when set and not empty (a binary carried to another machine, where the tree lies
// elsewhere: ci/gpu_env.sh sets it), else the source tree the binary was built from.
std::string source_dir();

}  // namespace dtnn
