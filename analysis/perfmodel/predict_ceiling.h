// Which contention ceiling and step jitter `dtnn predict` applies (step_model.h: ranks sharing a node compute
// n / C(n) slower; the slowest of p ranks ends its backward pass J * compute * E[max of p normals] late).
// The ceiling:
//   --ceiling RANKS:SPEEDUP,...  the pairs given, on any platform;
//   --ceiling none               none (and no stored jitter);
//   not given                    the store's (--db, table contention_ceilings, filled by `dtnn ingest` of
//                                experiments/contention_ceiling.sh's file): the newest row per rank count of the
//                                profile's machine (its report's MachineIdentity key) and model, when the
//                                platform is that machine (localhost*: the profile ran on one host and its ranks
//                                share that node). Other platforms' nodes are other machines: no stored row
//                                applies to them, and the note says so when one was stored. A missing --db
//                                file, a store older than the table, or no row: no ceiling.
// The jitter: --step_jitter J as given; else, where a stored ceiling applies, the step_jitter of its row with
// the fewest ranks that measured one; else 0.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/perfmodel/collective_model.h"
#include "analysis/perfmodel/predict_command.h"
#include "analysis/perfmodel/step_profile.h"

namespace dtnn::perf {

struct CeilingChoice {
  std::map<int, double> ceiling;  // empty: none
  std::string text;               // "2:1.83" as --ceiling spells it ("" for none): the prediction's variant
  double step_jitter = 0.0;       // J (0: none)
  std::string note;               // where they came from, one line ("" when there is nothing to say)
  std::vector<int64_t> stored_ids;  // contention_ceilings rows used
};

// Throws dtnn::Error (one line) for a malformed --ceiling or a --step_jitter outside [0, 1].
CeilingChoice choose_ceiling(const PredictCommandOptions& options, const StepProfile& profile, const Platform& platform);

}  // namespace dtnn::perf
