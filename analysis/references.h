// Performance references (ReFrame's `reference = (value, lower, upper, unit)` per system): what a machine's
// trials are expected to reach, and `dtnn check`'s verdict on the stored runs against them.
//
// references.toml holds [[reference]] tables:
//   machine   the machine's identity (environments.machine_key, core/machine.h: CPU, size, hypervisor); a
//             reference holds on that machine only, and a machine without one gets "no reference"
//   matrix    the matrix name, trial the trial key (runs.trial_key): the configuration
//   metric    samples_per_s (the run's training throughput, all ranks)
//   value     the reference; lower, upper: the bounds as fractions of it (lower = -0.3: 30 % below still
//             passes; upper = 1.0: twice the reference is suspicious; omit upper for no upper bound)
//   unit      "samples/s"; runs: how many runs the value is the median of; recorded: when and from what
// A trial is judged on the median of its ok runs in the selection on that machine, so one noisy run neither
// passes nor fails a trial by itself.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "analysis/ci_output.h"
#include "results/store.h"

namespace dtnn {

struct PerfReference {
  std::string machine, matrix, trial, metric = "samples_per_s", unit = "samples/s", recorded;
  double value = 0.0, lower = 0.0;
  std::optional<double> upper;  // none: no upper bound
  int runs = 0;
};

// Parses a references file (through the guarded TOML reader); throws dtnn::Error "<path>:<line>: ..." for unknown
// keys, wrong types, missing fields, bounds that exclude the value, and two references for one trial.
std::vector<PerfReference> load_references(const std::string& path);

struct PerfRow {
  std::string machine, matrix, trial, label;
  int runs = 0;
  double value = 0.0;                   // the median samples/s of the trial's runs
  std::optional<PerfReference> reference;
  std::string verdict;                  // pass | FAIL (below) | FAIL (above) | no reference
};

struct PerfCounts {
  int pass = 0, fail = 0, no_reference = 0;
  std::vector<PerfRow> rows;
};

// Every (machine, matrix, trial) of the ok runs in `selection` with a throughput, against its reference; prints
// the table and the counts.
PerfCounts check_references(const ResultStore& store, const std::vector<PerfReference>& refs,
                            const std::string& selection, const std::string& refs_path, std::ostream& out);

// `dtnn check --record-references FILE`: references from the medians of the selected runs, with the given
// bounds, written to FILE (atomically); references FILE already holds for other trials or machines are kept,
// those of the same (machine, matrix, trial) replaced. Returns how many were recorded.
int record_references(const ResultStore& store, const std::string& selection, const std::string& path, double lower,
                      std::optional<double> upper, std::ostream& out);

// JUnit test cases (one per trial: no reference is skipped, with the reason) and a Markdown section for CI,
// appended to check's.
std::vector<JUnitCase> references_junit(const PerfCounts& c);
std::string references_markdown(const PerfCounts& c, const std::string& refs_path);

}  // namespace dtnn
