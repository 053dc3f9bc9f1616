// The one table of `dtnn train` options (option_table.cpp): name, TrainOptions member, kind, range or
// choices, help, and where the option is understood. Every consumer derives from it:
//   - the CLI (experiments/cli.cpp) declares one command-line option per row and sets values with
//     set_option_text, so the command line and a matrix accept and refuse the same values;
//   - `dtnn train --list-options [--format json]` prints it (the PyTorch reference builds its parser
//     from the JSON, experiments/reference/torch_train.py);
//   - options_list() (the "Parameters" dump and the run report), validate_options() (ranges and choices at
//     start-up), the checkpoint's must-match list, matrix validation (experiments/matrix.cpp) and the
//     runner's list of options the PyTorch reference takes (experiments/runner.cpp) all iterate over it.
// Adding an option: a TrainOptions member (options.h, with its default) + one row in option_table.cpp +
// the code that uses it. tests/train/test_option_table.cpp fails if a consumer disagrees with the table.
#pragma once

#include <cfloat>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "train/options.h"

namespace dtnn {

enum class OptionKind {
  integer,  // int / int64_t / uint64_t member, inclusive [min, max]
  number,   // double member, finite, inclusive [min, max]
  boolean,  // True/False (also true/false, 1/0, yes/no; a bare flag means True)
  text,     // free text, or a comma list checked by the row's `canonical`
  path,     // a file or directory; a matrix resolves a relative one against the matrix file's directory
  choice,   // one of `choices` (case-insensitive, stored as written in the table) or accepted by `canonical`
};

// Where an option is understood; flags of a row.
enum OptionFlag : uint32_t {
  kOptMatrix = 1u << 0,     // a matrix may set it ([base], [axes], [[include]])
  kOptMustMatch = 1u << 1,  // a resumed run must have the checkpoint's value (train/checkpoint.cpp)
  kOptTorch = 1u << 2,      // the PyTorch reference (experiments/reference/torch_train.py) takes it
  kOptPyDTNN = 1u << 3,     // PyDTNN's option, with PyDTNN's meaning (otherwise dtnn's own)
  kOptPlanned = 1u << 4,    // accepted by the parser, not implemented yet: a non-default value exits 3
  kOptRunner = 1u << 5,     // set by the matrix runner itself (report, parallel), never by a matrix
  kOptAlias = 1u << 6,      // another spelling of a dtnn option, folded in by resolve_options()
};

using OptionField = std::variant<bool*, int*, int64_t*, uint64_t*, double*, std::string*>;

struct OptionSpec {
  const char* name;             // without "--"
  OptionKind kind;
  OptionField (*field)(TrainOptions&);
  uint32_t flags;
  const char* help;
  int64_t imin = 0, imax = INT64_MAX;  // integer rows: inclusive range (a uint64_t member: up to UINT64_MAX)
  // number rows: finite, in [dmin, dmax]; an open end excludes its bound ((0, inf) for learning_rate, [0, 1)
  // for momentum and the betas): the optimizer's own limits, so a matrix is refused before anything runs.
  double dmin = -DBL_MAX, dmax = DBL_MAX;
  bool dmin_open = false, dmax_open = false;
  std::vector<std::string> choices = {};  // choice rows with a fixed list (canonical spelling)
  // choice/text rows checked by code (models, algorithms, metric lists): the canonical value, or throws
  // dtnn::Error saying why the value is invalid.
  std::string (*canonical)(const std::string&) = nullptr;
  const char* why_not = "";     // kOptPlanned: why it is refused (printed when a run asks for it)
};

// Every `dtnn train` option, in the order of the "Parameters" dump and the run report.
const std::vector<OptionSpec>& train_option_table();
const OptionSpec* find_option(const std::string& name);  // nullptr when unknown

// The option's value in `o` as a user types it ("64", "0.001", "True", "simplecnn").
std::string option_text(const OptionSpec& spec, const TrainOptions& o);
// Its default (the TrainOptions member's initialiser), in the same form.
std::string option_default_text(const OptionSpec& spec);
// Parses `text` as the row's kind, checks range and choices, stores it in `o`. Throws dtnn::Error
// "--name: expected ..., got 'text'" naming the option.
void set_option_text(const OptionSpec& spec, TrainOptions& o, const std::string& text);
// The canonical text of a valid value (what set_option_text would store, as option_text prints it);
// throws like set_option_text.
std::string canonical_option_text(const OptionSpec& spec, const std::string& text);

// After parsing: folds PyDTNN's spellings into dtnn's options (--enable_best_of / --enable_conv_winograd /
// --enable_conv_gemm onto --conv_algo, --threads_per_process onto --threads, an old-style
// --loss_func=metric,...,loss list into --loss_func and --metrics), and refuses requests dtnn cannot honour
// (--dtype=float64, --enable_gpudirect, planned options given a non-default value) with dtnn::Unsupported.
// `given` lists the options set on the command line (or by a matrix), for conflicts with explicit values.
void resolve_options(TrainOptions& o, const std::vector<std::string>& given);

// Ranges and choices of every row (values set in code, e.g. by tests, never went through
// set_option_text), then the cross-option rules. Throws dtnn::Error naming the option.
void validate_options(const TrainOptions& o);

// The table as JSON (`dtnn train --list-options --format json`) or as an aligned text table.
std::string option_table_json();
std::string option_table_text();
// The reference page engine/OPTIONS.md: every row with its kind, default, values, help and flags.
std::string option_table_markdown();

}  // namespace dtnn
