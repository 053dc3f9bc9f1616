// Experiment matrices: a TOML file (experiments/*.toml, read with toml++) that names base `dtnn train`
// options and axes; the trials are the cartesian product of the axes, minus [[exclude]] rules, plus
// [[include]] points, each repeated `repeats` times by the runner.
//
//   name = "quickstart"                 # required; the matrix's name in the results store and its log
//                                       # directory: [A-Za-z0-9][A-Za-z0-9_.-]*, without ".."
//   description = "..."
//   repeats = 1                         # runs per trial (>= 1); samples are kept for statistics
//   repeat_seeds = false                # true: repeat r trains with seed + r (the spread over seeds, not
//                                       # only over timings); the repeats stay one trial (one key)
//   timeout_s = 600                     # per run (> 0)
//   tags = ["ci"]                       # optional, stored with every run (compare can select by tag)
//   [launcher]                          # how ranks are started (experiments/launcher.h): mpirun for
//   kind = "mpirun"                     # ranks > 1, srun for every trial; mpirun (default) | srun | none
//   hostfile = "hosts.txt"              # mpirun only; relative to the matrix file, like every path value
//   args = ["--bind-to", "core"]        # extra launcher arguments
//   [base]                              # `dtnn train` options (PyDTNN names) for every trial
//   dataset = "mnist"
//   num_epochs = 2
//   [axes]                              # each a non-empty array; product in declaration order
//   model = ["simplecnn", "simplemlp"]
//   ranks = [1, 2]
//   framework = ["dtnn", "pytorch"]
//   [[exclude]]                         # a trial matching every key of one rule is dropped
//   framework = "pytorch"
//   conv_algo = "im2col_gemm"
//   [[include]]                         # an extra trial: base + these values (all axes need not appear)
//   model = "simplemlp"
//   ranks = 4
//   [[include]]                         # arrays: one extra trial per combination (first key slowest)
//   mode = "predict"                    # predicted trials (experiments/runner_predict.h): not run, predicted
//   platform = ["eth10g", "ib100"]      #   by the performance model from the measured run of the same
//   ranks = [1, 2, 4, 8, 16, 32, 64, 128, 256]   # parameters with the fewest ranks
//
// Limits, checked before anything is expanded: at most 100,000 trials (axes product plus includes), a file of
// at most 4 MiB, tables/arrays/dotted keys nested at most 32 levels (the TOML parser recurses per level).
// A `none` launcher with a trial of ranks > 1 is refused at load, not when that trial's turn comes.
// Layout: nodes and ranks_per_node (positive integers; ranks = their product when not given, else they must
// agree: ranks = nodes x ranks_per_node, or ranks >= nodes), refused at load when the launcher cannot place
// them (kind none; mpirun with fewer hosts in its hostfile than nodes, or without one for nodes > 1).
// Parameters besides the `dtnn train` options: ranks (positive integer), device ("cpu" | "gpu", which maps
// to --enable_gpu), framework ("dtnn" | "pytorch": the PyTorch reference, DDP at more than one rank, in
// experiments/reference | "pydtnn": the real PyDTNN through experiments/peers/pydtnn_peer.py, from pydtnn_path or
// $DTNN_PYDTNN),
// and the others of matrix_params.cpp's table (scaling, transport, tracing, mode, platform, predictor).
// Values are validated: unknown keys, wrong TOML types, empty axes, unknown models / conv algorithms /
// datasets / optimizers / formats, and an axis value that no trial keeps after the excludes are errors.
// Every error is a dtnn::Error whose message names the file, the line and the key:
//   "experiments/x.toml:12: axis 'ranks': expected a list of positive integers (got "two")".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtnn {

struct Launcher {
  std::string kind = "mpirun";     // mpirun | srun | none
  std::string hostfile;            // absolute, or empty
  std::vector<std::string> args;
};

struct Trial {
  // Every parameter of the trial (base options and axis/include values) as the string a user would type on
  // the command line ("simplecnn", "64", "0.001", "True"). Sorted by name (std::map). conv_algo is stored
  // under the registry's full name ("cpu.im2col_gemm" for "im2col_gemm"), so both spellings give one key.
  std::map<std::string, std::string> params;
  // Stable identity: "name=value" pairs of `params` in name order joined by ';'. The same parameters give the
  // same key in every matrix, on every commit; compare and --resume match runs by it. A default written out
  // (`threads = 0`, `ranks = 1`) is part of the key as written: two trials of one matrix that differ only so
  // are one configuration, which parse_matrix refuses (without_defaults).
  std::string key;
  // Only the axis parameters ("model=simplecnn;ranks=2"), for progress lines and tables.
  std::string label;
  int ranks() const;                       // params["ranks"], else nodes x ranks_per_node (each 1 when absent)
  const std::string& framework() const;    // params["framework"], "dtnn" when absent
  std::string get(const std::string& name, const std::string& fallback = "") const;
};

struct Matrix {
  std::string name, description;
  std::string path;    // as given
  std::string dir;     // the matrix file's directory, absolute: relative paths in the matrix resolve against it
  std::string text;    // the whole file, stored in the results store
  std::string hash;    // hex SHA-256 of text
  int repeats = 1;
  bool repeat_seeds = false;  // repeat r trains with the trial's seed + r
  double timeout_s = 3600.0;
  std::vector<std::string> tags;
  Launcher launcher;
  std::vector<std::string> axis_names;  // declaration order
  std::vector<Trial> trials;            // expansion order: axes product (first axis slowest), then includes
};

// Parse and expand; throws dtnn::Error ("<path>:<line>: ...") on any problem. `path` is used in messages
// and to resolve a relative hostfile.
Matrix parse_matrix(const std::string& text, const std::string& path);
Matrix load_matrix(const std::string& path);  // reads the file; "<path>: cannot read" when it cannot

// Keep only trials whose params match every "name=value" filter (runner's --only); throws on a filter that
// is not name=value or names an unknown parameter. A value is taken in the form trials hold it (an option's
// canonical text: "nhwc" is "NHWC", "1e-3" is "0.001", "im2col_gemm" is "cpu.im2col_gemm"), and an absent
// parameter compares as its default (parameter_default: --only device=cpu keeps trials that do not set it).
std::vector<Trial> filter_trials(const std::vector<Trial>& trials, const std::vector<std::string>& filters);

// Relative paths in a matrix (path options such as dataset_train_path, the launcher's hostfile) name files
// relative to the matrix file, never to the caller's working directory: `cd /tmp && dtnn run
// <repo>/experiments/quickstart.toml` reads the same data as a run from the repository root. Trial keys keep
// the value as written (the same key on every clone); the runner resolves it when it builds the command.
std::string matrix_directory(const std::string& matrix_path);               // absolute, normalised
std::string resolve_against(const std::string& dir, const std::string& value);  // absolute or empty stay
bool is_path_parameter(const std::string& name);                            // a path row of the option table

// A matrix parameter's default, in the form trial params hold it: the option table's default for a `dtnn
// train` option ("64", "False", "auto"), the matrix's own defaults (ranks 1, device cpu, framework dtnn,
// scaling weak, transport default, tracing False, mode run, platform ib100, predictor model), "" when none
// (nodes and ranks_per_node: a layout is never the same as none).
std::string parameter_default(const std::string& name);
// `params` without the entries whose value is their parameter's default: what identifies a configuration.
std::map<std::string, std::string> without_defaults(const std::map<std::string, std::string>& params);

// The `dtnn train` option names a matrix may set (besides ranks/device/framework).
const std::vector<std::string>& matrix_option_names();

}  // namespace dtnn
