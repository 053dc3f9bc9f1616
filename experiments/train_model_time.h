// PyDTNN's performance-model options on `dtnn train`'s command line (--cpu_speed, --memory_bw, --network_bw,
// --network_lat, --network_alg). PyDTNN parses them and keeps them on its Model; training never reads them, and
// the one line that would print Model.calculate_time() is commented out in its pydtnn_benchmark.py. dtnn train
// prints that line when any of them is given: rank 0, before training, the step time PyDTNN's formulas give
// (analysis/perfmodel/pydtnn_model.h) for this model, batch per rank, rank count and reduction (blocking or
// not), as [total, compute, memory, network] seconds per training step. Training is unchanged.
// `dtnn predict --model_kind pydtnn` takes the same options for a whole scaling curve.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "train/options.h"

namespace dtnn::cli {

// True when `given` (the option names on the command line) names one of the five.
bool names_pydtnn_model_options(const std::vector<std::string>& given);

// The line for `o` at `ranks` ranks. Throws dtnn::Error for a model PyDTNN's formulas cannot walk.
void print_pydtnn_model_time(const TrainOptions& o, int ranks, std::ostream& out);

}  // namespace dtnn::cli
