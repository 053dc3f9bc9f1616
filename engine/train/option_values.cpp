// Values of the option table's rows: text <-> TrainOptions members, range and choice checks, PyDTNN's
// spellings folded into dtnn's options, and the table printed for people and for the PyTorch reference.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <cstdio>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"
#include "core/strings.h"
#include "trace/trace_output.h"
#include "train/option_table.h"

namespace dtnn {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void wrong(const OptionSpec& s, const std::string& what, const std::string& text) {
  fail("--", s.name, ": expected ", what, ", got '", text, "'");
}

bool parse_bool(const OptionSpec& s, const std::string& text) {
  const std::string v = lower(text);
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  wrong(s, "True or False (also true/false, 1/0, yes/no)", text);
}

// An integer in the row's range; `umax` replaces imax for unsigned 64-bit members.
uint64_t parse_integer(const OptionSpec& s, const std::string& text, bool unsigned64) {
  const std::string range = "[" + std::to_string(s.imin) + ", " +
                            (unsigned64 ? std::to_string(UINT64_MAX) : std::to_string(s.imax)) + "]";
  const char* b = text.data();
  const char* e = b + text.size();
  if (unsigned64) {
    uint64_t v = 0;
    const auto r = std::from_chars(b, e, v);
    if (text.empty() || r.ec != std::errc() || r.ptr != e || v < static_cast<uint64_t>(s.imin))
      wrong(s, "an integer in " + range, text);
    return v;
  }
  int64_t v = 0;
  const auto r = std::from_chars(b, e, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != e || v < s.imin || v > s.imax)
    wrong(s, "an integer in " + range, text);
  return static_cast<uint64_t>(v);
}

double parse_number(const OptionSpec& s, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  std::string what = "a finite number";
  if (s.dmin > -DBL_MAX && s.dmax < DBL_MAX)
    what += std::string(" in ") + (s.dmin_open ? "(" : "[") + format_double(s.dmin) + ", " + format_double(s.dmax) +
            (s.dmax_open ? ")" : "]");
  else if (s.dmin > -DBL_MAX)
    what += (s.dmin_open ? " > " : " >= ") + format_double(s.dmin);
  // strtod also reads C's hex floats (0x1p-3); PyDTNN's float() and a matrix's TOML do not.
  const bool hex = text.find_first_of("xX") != std::string::npos;
  if (text.empty() || *end != '\0' || hex || !std::isfinite(v) || v < s.dmin || v > s.dmax || (s.dmin_open && v == s.dmin) ||
      (s.dmax_open && v == s.dmax))
    wrong(s, what, text);
  return v;
}

std::string canonical_choice(const OptionSpec& s, const std::string& text) {
  if (s.canonical) {
    try {
      return s.canonical(text);
    } catch (const Error& e) {
      fail("--", s.name, ": ", e.what());
    }
  }
  for (const std::string& c : s.choices)  // PyDTNN's scripts write Adam, nhwc, ...
    if (lower(c) == lower(text)) return c;
  std::string known;
  for (const std::string& c : s.choices) known += (known.empty() ? "" : ", ") + c;
  wrong(s, "one of " + known, text);
}

const char* kind_name(OptionKind k) {
  switch (k) {
    case OptionKind::integer: return "integer";
    case OptionKind::number: return "number";
    case OptionKind::boolean: return "boolean";
    case OptionKind::text: return "text";
    case OptionKind::path: return "path";
    case OptionKind::choice: return "choice";
  }
  return "?";
}

std::vector<std::string> flag_names(uint32_t flags) {
  std::vector<std::string> out;
  const std::pair<uint32_t, const char*> names[] = {{kOptMatrix, "matrix"},   {kOptMustMatch, "must_match"},
                                                    {kOptTorch, "torch"},     {kOptPyDTNN, "pydtnn"},
                                                    {kOptPlanned, "planned"}, {kOptRunner, "runner"},
                                                    {kOptAlias, "alias"}};
  for (const auto& [bit, name] : names)
    if (flags & bit) out.push_back(name);
  return out;
}

// --model_averaging and the options that only it reads (parallel/model_averager.h).
void validate_averaging(const TrainOptions& o) {
  static const char* const own[] = {"average_every_epochs",  "average_every_steps", "average_optimizer_state",
                                    "average_bn_statistics", "blocks_per_worker",   "shuffle_blocks",
                                    "shuffle_block_data",    "num_batches_per_worker"};
  DTNN_CHECK(!o.dynamic_blocks || o.model_averaging == "asynchronous" || o.model_averaging == "partially_asynchronous",
             "--dynamic_blocks applies to --model_averaging=asynchronous or partially_asynchronous (",
             o.model_averaging == "synchronous" ? "synchronous averages need equal shares" : "this run has none", ")");
  if (o.model_averaging == "none") {
    for (const char* name : own) {
      const OptionSpec& s = *find_option(name);
      DTNN_CHECK(option_text(s, o) == option_default_text(s), "--", name, "=", option_text(s, o),
                 " applies only with --model_averaging (this run sums gradients every step)");
    }
    return;
  }
  if (o.model_averaging == "asynchronous") {
    DTNN_CHECK(o.average_every_steps == 0, "--average_every_steps applies to --model_averaging=synchronous or "
               "partially_asynchronous (asynchronous merges every --average_every_epochs epochs)");
  } else if (o.model_averaging == "partially_asynchronous") {
    DTNN_CHECK(o.average_every_epochs == 1, "--average_every_epochs applies to --model_averaging=synchronous or "
               "asynchronous (partially_asynchronous merges every --average_every_steps steps)");
  }
  DTNN_CHECK(!o.dynamic_blocks || o.average_every_steps == 0, "--dynamic_blocks: partially_asynchronous merges after "
             "each claimed block (--average_every_steps does not apply)");
  DTNN_CHECK(!o.dynamic_blocks || o.steps_per_epoch == 0, "--dynamic_blocks: --steps_per_epoch does not apply (use "
             "--num_batches_per_worker, batches per block)");
  DTNN_CHECK(o.model_averaging == "synchronous" || !o.average_optimizer_state, "--average_optimizer_state applies to "
             "--model_averaging=synchronous only (the asynchronous modes merge the weights, the optimizer state stays local)");
  const char* conflict = o.sync_batchnorm            ? "--sync_batchnorm (BatchNormalization communicating every step)"
                         : o.non_blocking_mpi         ? "--non_blocking_mpi (it overlaps per-step gradient sums)"
                         : o.global_batch_size > 0    ? "--global_batch_size (every worker trains on --batch_size)"
                         : !o.rank_batch_shares.empty() ? "--rank_batch_shares (every worker trains on --batch_size)"
                         : !o.checkpoint_file.empty() ? "--checkpoint_file (the ranks' weights differ between averages)"
                         : !o.resume_from.empty()     ? "--resume_from"
                                                      : nullptr;
  DTNN_CHECK(!conflict, "--model_averaging=", o.model_averaging, " cannot be combined with ", conflict);
  if (o.enable_gpu)
    unsupported("--model_averaging with --enable_gpu: not implemented yet (GPU models sum gradients on the device)");
  DTNN_CHECK(o.steps_per_epoch == 0 || o.num_batches_per_worker == 0 || o.steps_per_epoch == o.num_batches_per_worker,
             "--steps_per_epoch=", o.steps_per_epoch, " contradicts --num_batches_per_worker=", o.num_batches_per_worker,
             " (with model averaging both count a worker's batches): give one of them");
}

// --dtype: float32, or bfloat16 on a CPU whose oneDNN runs it natively (exit 3 elsewhere: emulated bf16 is
// slower than float32, so it would only mislead); bf16 convolutions are cpu.onednn_bf16's, and a float32
// algorithm asked for beside it is a contradiction, as is the bf16 algorithm without --dtype=bfloat16.
// --allreduce_dtype=bfloat16: the CPU gradient sum only (not the GPU reductions, not model averaging).
void check_dtype(const TrainOptions& o) {
  if (o.dtype == "float64") unsupported("--dtype=float64: dtnn computes in float32, or bfloat16 on CPUs with bf16 kernels");
  if (o.dtype == "float16")
    unsupported("--dtype=float16: half-precision training with loss scaling (GPUs) is not implemented yet; on CPUs "
                "with AVX512-BF16 or AMX use --dtype=bfloat16");
  if (o.allreduce_dtype == "bfloat16" && o.enable_gpu)
    unsupported("--allreduce_dtype=bfloat16 with --enable_gpu: the GPU reductions sum float32 only");
  if (o.allreduce_dtype == "bfloat16" && o.model_averaging != "none")
    unsupported("--allreduce_dtype=bfloat16 with --model_averaging: only the gradient sum of data parallelism "
                "travels in bfloat16");
  const bool bf16_algo = o.conv_algo == "cpu.onednn_bf16";
  if (o.dtype != "bfloat16") {
    DTNN_CHECK(!bf16_algo, "--conv_algo=cpu.onednn_bf16 multiplies in bfloat16: ask for it with --dtype=bfloat16");
    return;
  }
  // The contradiction first: a usage error whatever the machine.
  DTNN_CHECK(o.conv_algo == "auto" || bf16_algo, "--dtype=bfloat16 computes the convolutions with cpu.onednn_bf16; --conv_algo=",
             o.conv_algo, " is a float32 algorithm (leave --conv_algo at auto)");
  if (o.enable_gpu) unsupported("--dtype=bfloat16 with --enable_gpu: mixed precision on GPUs is not implemented yet");
  if (const std::string why = cpu_bf16_support(); !why.empty()) unsupported("--dtype=bfloat16: ", why);
}

}  // namespace

std::string option_text(const OptionSpec& spec, const TrainOptions& o) {
  const OptionField f = spec.field(const_cast<TrainOptions&>(o));  // read only
  if (auto p = std::get_if<bool*>(&f)) return **p ? "True" : "False";
  if (auto p = std::get_if<int*>(&f)) return std::to_string(**p);
  if (auto p = std::get_if<int64_t*>(&f)) return std::to_string(**p);
  if (auto p = std::get_if<uint64_t*>(&f)) return std::to_string(**p);
  if (auto p = std::get_if<double*>(&f)) return format_double(**p);
  return *std::get<std::string*>(f);
}

std::string option_default_text(const OptionSpec& spec) {
  static const TrainOptions defaults;
  return option_text(spec, defaults);
}

void set_option_text(const OptionSpec& spec, TrainOptions& o, const std::string& text) {
  const OptionField f = spec.field(o);
  switch (spec.kind) {
    case OptionKind::boolean: *std::get<bool*>(f) = parse_bool(spec, text); return;
    case OptionKind::integer:
      if (auto p = std::get_if<uint64_t*>(&f)) **p = parse_integer(spec, text, true);
      else if (auto q = std::get_if<int64_t*>(&f)) **q = static_cast<int64_t>(parse_integer(spec, text, false));
      else *std::get<int*>(f) = static_cast<int>(parse_integer(spec, text, false));  // rows bound int members to int
      return;
    case OptionKind::number: *std::get<double*>(f) = parse_number(spec, text); return;
    case OptionKind::choice: *std::get<std::string*>(f) = canonical_choice(spec, text); return;
    case OptionKind::text:
    case OptionKind::path:
      DTNN_CHECK(text.find('\n') == std::string::npos, "--", spec.name, ": a value cannot hold a newline");
      *std::get<std::string*>(f) = spec.canonical ? canonical_choice(spec, text) : text;
      return;
  }
}

std::string canonical_option_text(const OptionSpec& spec, const std::string& text) {
  TrainOptions scratch;
  set_option_text(spec, scratch, text);
  return option_text(spec, scratch);
}

void resolve_options(TrainOptions& o, const std::vector<std::string>& given) {
  const auto was_given = [&](const char* name) { return std::find(given.begin(), given.end(), name) != given.end(); };
  for (const OptionSpec& s : train_option_table())
    if ((s.flags & kOptPlanned) && option_text(s, o) != option_default_text(s))
      unsupported("--", s.name, "=", option_text(s, o), ": not implemented yet (", s.why_not, ")");
  // PyDTNN's README writes the bare flag --blocking_mpi; its parser has --non_blocking_mpi. One is the other's
  // negation, so --blocking_mpi=False asks for the non-blocking reduction.
  if (was_given("blocking_mpi")) {
    const bool non_blocking = !o.blocking_mpi;
    DTNN_CHECK(!was_given("non_blocking_mpi") || o.non_blocking_mpi == non_blocking, "--blocking_mpi=",
               o.blocking_mpi ? "True" : "False", " contradicts --non_blocking_mpi=", o.non_blocking_mpi ? "True" : "False",
               ": give one of them");
    o.non_blocking_mpi = non_blocking;
    o.blocking_mpi = false;
  }
  // PyDTNN's --evaluate: the test set before and after training when True, never when False. dtnn's own
  // --evaluate_on_test (after training) follows it unless given itself.
  if (was_given("evaluate") && !was_given("evaluate_on_test")) o.evaluate_on_test = o.evaluate;
  // PyDTNN's --enable_gpudirect keeps a GPU model's gradients in mapped pinned host memory, which MPI sums in
  // place (no CUDA-aware MPI). dtnn's GPU reduction stages gradients through pinned host buffers for MPI (or
  // sums them on the devices with --enable_nccl): the same arithmetic, so it is accepted as that; the CPU path
  // never reads it, as PyDTNN's does not.
  // PyDTNN's --tracing=True without --tracer_output drives Extrae, whose scripts/extrae.xml merges the trace
  // into ./test.prv (.pcf, .row) in the launch folder: dtnn writes its Paraver trace there.
  if (o.tracing && o.tracer_output.empty()) o.tracer_output = "test.prv";
  // PyDTNN's precedence: best_of, then Winograd (a layer it declines falls back), then ConvGemm.
  const char* algo = o.enable_best_of ? "best_of"
                     : o.enable_conv_winograd ? "cpu.winograd_f4"
                     : o.enable_conv_gemm     ? "cpu.convgemm"
                                              : nullptr;
  if (algo) {
    DTNN_CHECK(!was_given("conv_algo") || o.conv_algo == algo, "--conv_algo=", o.conv_algo, " contradicts PyDTNN's ",
               o.enable_best_of ? "--enable_best_of" : o.enable_conv_winograd ? "--enable_conv_winograd" : "--enable_conv_gemm",
               " (which means --conv_algo=", algo, "): give one of them");
    o.conv_algo = algo;
  }
  check_dtype(o);
  if (o.threads_per_process > 0) {
    DTNN_CHECK(!was_given("threads") || o.threads == o.threads_per_process, "--threads=", o.threads,
               " contradicts --threads_per_process=", o.threads_per_process);
    o.threads = o.threads_per_process;
  }
  if (o.loss_func.find(',') != std::string::npos) {  // PyDTNN's older "metric,...,loss" list
    std::string loss, metrics = o.metrics;
    size_t start = 0;
    while (start <= o.loss_func.size()) {
      const size_t comma = std::min(o.loss_func.find(',', start), o.loss_func.size());
      const std::string item = o.loss_func.substr(start, comma - start);
      start = comma + 1;
      if (item == "categorical_cross_entropy" || item == "binary_cross_entropy") loss = item;
      else if (!item.empty() && ("," + metrics + ",").find("," + item + ",") == std::string::npos)
        metrics += (metrics.empty() ? "" : ",") + item;
    }
    o.loss_func = loss;
    o.metrics = metrics;
  }
  // The schedulers' watched values default to PyDTNN's categorical cross-entropy, a name that does not exist
  // when the loss is another one: a default left as it is follows the loss instead, so
  // --loss_func=binary_cross_entropy --lr_schedulers=early_stopping works without naming the metric.
  // A value given explicitly is kept (and a wrong one is still refused by the scheduler, naming the valid ones).
  if (o.loss_func != "categorical_cross_entropy" && !o.loss_func.empty()) {
    const auto follow = [&](const char* option, std::string& metric, bool val) {
      if (!was_given(option)) metric = (val ? "val_" : "") + o.loss_func;
    };
    LRSchedulerOptions& s = o.lr_schedulers;
    follow("early_stopping_metric", s.early_stopping_metric, true);
    follow("reduce_lr_on_plateau_metric", s.reduce_lr_on_plateau_metric, true);
    follow("model_checkpoint_metric", s.model_checkpoint_metric, true);
    follow("stop_at_loss_metric", s.stop_at_loss_metric, false);
  }
}

void validate_options(const TrainOptions& o) {
  // Every row through its own parser: values set in code get the command line's checks.
  for (const OptionSpec& s : train_option_table()) {
    if (s.kind == OptionKind::text && !s.canonical) continue;
    const std::string text = option_text(s, o);
    if (s.kind == OptionKind::path || (s.kind == OptionKind::text && text.empty())) continue;
    canonical_option_text(s, text);
  }
  // MNIST's and CIFAR-10's test files have names of their own in a shared folder; ImageNet's test pool is
  // every shard of its folder, so the training folder read as the test folder (the default when
  // --dataset_test_path is not given) would report training accuracy as test accuracy.
  DTNN_CHECK(o.resize == 0 || (o.dataset_name == "mnist" && !o.pad_to_cifar), "--resize applies to MNIST-format ",
             "images (--dataset=mnist, without --pad_to_cifar), not to ", o.pad_to_cifar ? "padded " : "", o.dataset_name, " data");
  if (o.dataset_name == "imagenet" && !o.use_synthetic_data && (o.evaluate_on_test || o.test_as_validation)) {
    std::error_code ec;
    DTNN_CHECK(!o.dataset_test_path.empty() &&
                   !std::filesystem::equivalent(o.dataset_train_path, o.dataset_test_path, ec),
               "--dataset=imagenet reads every shard of --dataset_test_path as the test set: give a folder other "
               "than --dataset_train_path (", o.dataset_test_path.empty() ? "not given" : "the same folder",
               "), or --evaluate_on_test=False without --test_as_validation");
  }
  DTNN_CHECK(!o.enable_nccl || o.enable_gpu, "--enable_nccl needs --enable_gpu");
  DTNN_CHECK(!o.gpu_layer_times || o.enable_gpu, "--gpu_layer_times needs --enable_gpu");
  if (o.tracing) trace_outputs(o.tracer_output);
  validate_averaging(o);
  DTNN_CHECK(!o.evaluate_only || !o.weights_and_bias_filename.empty() || !o.resume_from.empty(),
             "--evaluate_only needs the weights to evaluate (--weights_and_bias_filename or --resume_from)");
  // Refused rather than accepted and silently ignored: the trace is written after training.
  DTNN_CHECK(!o.evaluate_only || (!o.tracing && !o.profile),
             "--tracing and --profile record training steps: --evaluate_only trains none");
}

std::string option_table_json() {
  nlohmann::json rows = nlohmann::json::array();
  for (const OptionSpec& s : train_option_table()) {
    nlohmann::json r = {{"name", s.name}, {"kind", kind_name(s.kind)}, {"default", option_default_text(s)},
                        {"help", s.help}, {"flags", flag_names(s.flags)}};
    if (s.kind == OptionKind::integer) r["range"] = {s.imin, s.imax};
    if (s.kind == OptionKind::number)
      r["range"] = {s.dmin, s.dmax}, r["range_open_below"] = s.dmin_open, r["range_open_above"] = s.dmax_open;
    if (!s.choices.empty()) r["choices"] = s.choices;
    if (s.flags & kOptPlanned) r["planned"] = s.why_not;
    rows.push_back(std::move(r));
  }
  return nlohmann::json{{"schema", "dtnn.train_options/1"}, {"options", rows}}.dump(1) + "\n";
}

std::string option_table_text() {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-32s %-8s %-28s %s\n", "option", "kind", "default", "where (help: dtnn train --help)");
  out += buf;
  for (const OptionSpec& s : train_option_table()) {
    std::string where;
    for (const std::string& f : flag_names(s.flags)) where += (where.empty() ? "" : ",") + f;
    std::string def = option_default_text(s);
    if (def.empty()) def = "\"\"";
    std::snprintf(buf, sizeof buf, "--%-30s %-8s %-28s %s\n", s.name, kind_name(s.kind), def.c_str(), where.c_str());
    out += buf;
  }
  return out;
}

namespace {

std::string markdown_cell(std::string text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// What values a row takes, in words: a range, a list, or what checks it.
std::string values_text(const OptionSpec& s) {
  char buf[128];
  if (!s.choices.empty()) {
    std::string out;
    for (const std::string& c : s.choices) out += (out.empty() ? "" : ", ") + c;
    return out;
  }
  if (s.kind == OptionKind::integer) {
    if (s.imax == INT64_MAX) std::snprintf(buf, sizeof buf, ">= %lld", static_cast<long long>(s.imin));
    else std::snprintf(buf, sizeof buf, "%lld..%lld", static_cast<long long>(s.imin), static_cast<long long>(s.imax));
    return buf;
  }
  if (s.kind == OptionKind::number) {
    if (s.dmax == DBL_MAX && s.dmin == -DBL_MAX) return "any";
    if (s.dmax == DBL_MAX) std::snprintf(buf, sizeof buf, "%s %g", s.dmin_open ? ">" : ">=", s.dmin);
    else std::snprintf(buf, sizeof buf, "%s%g, %g%s", s.dmin_open ? "(" : "[", s.dmin, s.dmax, s.dmax_open ? ")" : "]");
    return buf;
  }
  if (s.kind == OptionKind::boolean) return "True, False";
  return s.canonical ? "checked when parsed" : "";
}

}  // namespace

std::string option_table_markdown() {
  std::string out =
      "# `dtnn train` options\n\n"
      "Generated from the option table (engine/train/option_table.cpp) by\n"
      "`dtnn train --list-options --format markdown > engine/OPTIONS.md`; ctest `house.option_reference` fails\n"
      "when this file and the table differ. Booleans take `--name`, `--name=True` or `--name=False`. How options are\n"
      "read, PyDTNN's launcher options in dtnn and adding an option: [USING_OPTIONS.md](USING_OPTIONS.md).\n\n"
      "Where: **matrix** a matrix may set it; **must_match** a resumed run must repeat it; **torch** the PyTorch\n"
      "reference takes it; **pydtnn** PyDTNN's option with PyDTNN's meaning (otherwise dtnn's own); **runner**\n"
      "set by `dtnn run` itself; **alias** another spelling of a dtnn option; **planned** parsed, refused (exit 3)\n"
      "until implemented.\n\n"
      "| option | kind | default | values | meaning | where |\n|---|---|---|---|---|---|\n";
  for (const OptionSpec& s : train_option_table()) {
    std::string where;
    for (const std::string& f : flag_names(s.flags)) where += (where.empty() ? "" : ", ") + f;
    const std::string def = option_default_text(s);
    const std::string def_cell = def.empty() ? "" : "`" + markdown_cell(def) + "`";
    out += "| `--" + std::string(s.name) + "` | " + kind_name(s.kind) + " | " + def_cell + " | " +
           markdown_cell(values_text(s)) + " | " + markdown_cell(s.help) + " | " + where + " |\n";
  }
  return out;
}

}  // namespace dtnn
