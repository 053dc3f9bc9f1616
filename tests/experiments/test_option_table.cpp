// Every consumer of the `dtnn train` option table agrees with it: the command line (`dtnn train --help`),
// the matrix parameters, the "Parameters"/report listing, the checkpoint's must-match list, and the values
// each accepts and refuses. (The PyTorch reference's parser: tests/experiments/test_torch_options.sh.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "cli_helpers.h"
#include "core/error.h"
#include "experiments/matrix.h"
#include "io/npz.h"
#include "io/npz_values.h"
#include "train/option_table.h"
#include "train/run.h"

using dtnn::OptionSpec;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> names_with(uint32_t flag, bool want = true) {
  std::vector<std::string> out;
  for (const OptionSpec& s : dtnn::train_option_table())
    if (((s.flags & flag) != 0) == want) out.push_back(s.name);
  return out;
}

std::vector<std::string> all_names() { return names_with(0, false); }

dtnn::Matrix parse(const std::string& text) { return dtnn::parse_matrix(text, "/tmp/option_table_test.toml"); }

}  // namespace

TEST_CASE("option table: names are unique and every default passes its own row's parser", "[options]") {
  std::set<std::string> seen;
  for (const OptionSpec& s : dtnn::train_option_table()) {
    INFO(s.name);
    CHECK(seen.insert(s.name).second);
    CHECK(std::string(s.help).size() > 3);
    CHECK(((s.flags & dtnn::kOptPlanned) == 0) == (std::string(s.why_not).empty()));
    const std::string def = dtnn::option_default_text(s);
    if (s.kind == dtnn::OptionKind::path || (def.empty() && s.kind == dtnn::OptionKind::text)) continue;
    CHECK(dtnn::canonical_option_text(s, def) == def);
  }
  CHECK(dtnn::find_option("batch_size") != nullptr);
  CHECK(dtnn::find_option("no_such_option") == nullptr);
}

TEST_CASE("option table: the command line has one option per row and no other train option", "[options][cli]") {
  const dtnn::test::Command help = dtnn::test::run_dtnn("train --help");
  REQUIRE(help.status == 0);
  std::set<std::string> cli;
  const std::regex option(R"(^\s+--([a-z0-9_\-]+))");
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, option)) cli.insert(m[1]);
  }
  for (const char* own : {"list-options", "format"}) CHECK(cli.erase(own) == 1);  // the listing's own flags
  const std::vector<std::string> rows = all_names();
  CHECK(cli == std::set<std::string>(rows.begin(), rows.end()));
}

TEST_CASE("option table: matrix parameters, the listing and the checkpoint's must-match list come from it",
          "[options][matrix]") {
  CHECK(dtnn::matrix_option_names() == names_with(dtnn::kOptMatrix));
  std::vector<std::string> listed;
  const dtnn::TrainOptions defaults;
  for (const auto& [name, value] : dtnn::options_list(defaults)) listed.push_back(name);
  CHECK(listed == names_with(dtnn::kOptPlanned, false));

  // A checkpoint records exactly the must-match rows (and the rank count), each as the table prints it.
  const std::string ck = dtnn::test::temp_path("option_table_ck.npz");
  const dtnn::test::Command c = dtnn::test::run_dtnn(
      "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=1 --evaluate_on_test=False "
      "--learning_rate=0.003 --optimizer=Adam --progress=False --checkpoint_file=" + ck);
  REQUIRE(c.status == 0);
  dtnn::io::NpyArrayMap arrays;
  for (dtnn::io::NpyArray& a : dtnn::io::read_npz(ck)) arrays.emplace(a.name, std::move(a));
  const std::string text = dtnn::io::read_text(arrays, "dtnn_options", ck);
  std::vector<std::string> recorded;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '~') recorded.push_back(line.substr(0, line.find('=')));
  std::vector<std::string> expected = names_with(dtnn::kOptMustMatch);
  expected.push_back("ranks");
  CHECK(recorded == expected);
  CHECK(text.find("learning_rate=0.003\n") != std::string::npos);
  CHECK(text.find("optimizer=adam\n") != std::string::npos);
  fs::remove(ck);
}

TEST_CASE("option table: a matrix and the command line accept and refuse the same values", "[options][matrix]") {
  // Values where separate checks could disagree: nhwc (accepted by both, as NHWC), threads over 1024
  // (refused by both), the optimizer's case.
  CHECK(parse("name = \"d\"\n[base]\ntensor_format = \"nhwc\"\n").trials[0].get("tensor_format") == "NHWC");
  CHECK(parse("name = \"d\"\n[base]\noptimizer = \"Adam\"\n").trials[0].get("optimizer") == "adam");
  CHECK_THROWS_WITH(parse("name = \"d\"\n[base]\nthreads = 2000\n"), Catch::Contains("threads"));
  CHECK_THROWS_WITH(parse("name = \"d\"\n[base]\nmetrics = \"accuracy_typo\"\n"), Catch::Contains("unknown metric"));
  CHECK_THROWS_WITH(parse("name = \"d\"\n[base]\nnetwork_bw = 5.0\n"),
                    Catch::Contains("'network_bw' is a `dtnn train` option a matrix does not set"));
  CHECK_THROWS_WITH(parse("name = \"d\"\n[base]\nenable_best_of = true\n"), Catch::Contains("sets conv_algo"));
  CHECK_THROWS_WITH(parse("name = \"d\"\n[base]\ndataset_train_path = \"a\\nb\"\n"), Catch::Contains("line break"));
  CHECK_THROWS_WITH(parse("name = \"d\"\n[base]\ndataset_train_path = \"x;learning_rate=0.1\"\n"),
                    Catch::Contains("cannot hold ';'"));
  const auto cli_status = [](const std::string& option) {
    return dtnn::test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=1 "
                                "--evaluate_on_test=False --progress=False " + option).status;
  };
  CHECK(cli_status("--tensor_format=nhwc") == 0);
  CHECK(cli_status("--optimizer=Adam") == 0);
  CHECK(cli_status("--threads=2000") == 2);
  CHECK(cli_status("--metrics=accuracy_typo") == 2);
  CHECK(cli_status("'--metrics=categorical_accuracy, categorical_mse'") == 0);  // PyDTNN strips the spaces
  CHECK(cli_status("--evaluate") == 0);           // a bare boolean is True (PyDTNN's spelling) ...
  CHECK(cli_status("--evaluate=") == 2);          // ... an empty value is not
  CHECK(cli_status("--learning_rate=0x1p-3") == 2);  // C's hex floats: neither PyDTNN's float() nor TOML reads them
  // The optimizer's own limits, refused by the table (a matrix before any trial runs), not when training starts.
  for (const char* bad : {"learning_rate = 0.0", "momentum = 1.0", "beta1 = 1.0", "beta2 = 1", "rho = 1.0",
                          "epsilon = 0.0"}) {
    const std::string name = std::string(bad).substr(0, std::string(bad).find(' '));
    CHECK_THROWS_WITH(parse(std::string("name = \"d\"\n[base]\n") + bad + "\n"),
                      Catch::Contains("'" + name + "': expected") &&
                          (Catch::Contains(", 1), got") || Catch::Contains("> 0, got") ||
                           Catch::Contains("(0, 3.4028234663852886e+38], got")));
    const dtnn::test::Command r = dtnn::test::run_dtnn(
        "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=1 --progress=False --" + name + "=" +
        std::string(bad).substr(name.size() + 3));
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("--" + name + ": expected"));
  }
  CHECK(parse("name = \"d\"\n[base]\nmomentum = 0.99\nlearning_rate = 1e-9\n").trials.size() == 1);
}

TEST_CASE("option table: PyDTNN's launcher options are accepted with PyDTNN's meaning or refused with a reason",
          "[options][cli]") {
  {
    dtnn::TrainOptions o;
    dtnn::set_option_text(*dtnn::find_option("enable_best_of"), o, "True");
    dtnn::resolve_options(o, {"enable_best_of"});
    CHECK(o.conv_algo == "best_of");
  }
  {
    dtnn::TrainOptions o;
    o.enable_conv_winograd = o.enable_conv_gemm = true;  // PyDTNN: Winograd where it applies, ConvGemm elsewhere
    dtnn::resolve_options(o, {});
    CHECK(o.conv_algo == "cpu.winograd_f4");
  }
  {
    dtnn::TrainOptions o;
    o.threads_per_process = 3;
    dtnn::resolve_options(o, {});
    CHECK(o.threads == 3);
  }
  {
    dtnn::TrainOptions o;
    dtnn::set_option_text(*dtnn::find_option("loss_func"), o, "categorical_accuracy,categorical_cross_entropy");
    o.metrics = "categorical_mse";
    dtnn::resolve_options(o, {});
    CHECK(o.loss_func == "categorical_cross_entropy");
    CHECK(o.metrics == "categorical_mse,categorical_accuracy");
  }
  {
    dtnn::TrainOptions o;
    o.enable_conv_gemm = true;
    o.conv_algo = "cpu.direct";
    CHECK_THROWS_WITH(dtnn::resolve_options(o, {"conv_algo", "enable_conv_gemm"}), Catch::Contains("contradicts"));
  }
  {
    dtnn::TrainOptions o;
    o.dtype = "float64";
    CHECK_THROWS_AS(dtnn::resolve_options(o, {}), dtnn::Unsupported);
  }
  const std::string synth = "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=1 "
                            "--evaluate_on_test=False --progress=False ";
  for (const char* accepted : {"--dtype=float32", "--enable_memory_cache=False", "--shared_storage=True",
                               "--mpi_processes=1", "--threads_per_process=1", "--enable_conv_gemm=True",
                               "--gpus_per_node=1", "--tracing=False"}) {
    INFO(accepted);
    CHECK(dtnn::test::run_dtnn(synth + accepted).status == 0);
  }
  for (const char* accepted : {"--non_blocking_mpi=True", "--non_blocking_mpi=True --gradient_bucket_mb=0",
                               "--blocking_mpi", "--blocking_mpi=True", "--global_batch_size=128", "--profile=True"}) {
    INFO(accepted);
    CHECK(dtnn::test::run_dtnn(synth + accepted).status == 0);
  }
  // PyDTNN's performance-model options: training unchanged, the model's step time printed (the line PyDTNN's
  // pydtnn_benchmark.py has commented out); simplemlp's three FC layers at 64 samples, blocking, one rank:
  // 2 x 64 x (784x512 + 512x512 + 512x512 + 512x10) FLOPs forward, twice that backward, at 1e9 FLOP/s
  // (memory_bw 1e15 B/s keeps every matmul compute-bound): 3 x 2 x 64 x 930,816 / 1e9 = 0.357433 s (the real
  // PyDTNN's Model.calculate_time gives 0.35743332: tests/analysis/test_pydtnn_model_peer.py).
  {
    const dtnn::test::Command c = dtnn::test::run_dtnn(synth + "--cpu_speed=1e9 --memory_bw=1e15");
    CHECK(c.status == 0);
    CHECK(c.out.find("**** Model time:  [3.574333e-01") != std::string::npos);
    CHECK(c.out.find("seconds per step of 64 samples per rank on 1 rank(s), blocking)") != std::string::npos);
    CHECK(c.out.find("**** Training") != std::string::npos);
    CHECK(dtnn::test::run_dtnn(synth).out.find("Model time") == std::string::npos);  // only when given
  }
  // --tracing alone writes Paraver's files where PyDTNN's Extrae setup merges its trace (./test.prv, .pcf, .row).
  {
    const std::string dir = dtnn::test::temp_path("tracing_default");
    std::filesystem::create_directories(dir);
    CHECK(std::system(("cd " + dir + " && " + std::string(DTNN_BINARY) + " " + synth + "--tracing=True > out.txt 2>&1")
                          .c_str()) == 0);
    for (const char* file : {"test.prv", "test.pcf", "test.row"}) {
      INFO(file);
      CHECK(std::filesystem::file_size(dir + "/" + file) > 0);
    }
    std::filesystem::remove_all(dir);
  }
  // A --tracer_output of an unknown kind: one line, exit 1 (as every option the run refuses).
  for (const char* bad : {"--tracing=True --tracer_output=t.xyz"}) {
    INFO(bad);
    const dtnn::test::Command c = dtnn::test::run_dtnn(synth + bad);
    CHECK(c.status == 1);
    CHECK(dtnn::test::one_line_error(c));
  }
  const dtnn::test::Command both = dtnn::test::run_dtnn(synth + "--blocking_mpi --non_blocking_mpi=True");
  CHECK(both.status == 2);
  CHECK(both.err == "dtnn: --blocking_mpi=True contradicts --non_blocking_mpi=True: give one of them\n");
  const dtnn::test::Command neither = dtnn::test::run_dtnn(synth + "--blocking_mpi=False --non_blocking_mpi=False");
  CHECK(neither.status == 2);
  CHECK(neither.err == "dtnn: --blocking_mpi=False contradicts --non_blocking_mpi=False: give one of them\n");
  for (const char* accepted : {"--enable_gpudirect=True", "--network_alg=bta"}) {  // on the CPU, as PyDTNN
    INFO(accepted);
    CHECK(dtnn::test::run_dtnn(synth + accepted).status == 0);
  }
  for (const char* refused : {"--dtype=float64"}) {
    INFO(refused);
    const dtnn::test::Command c = dtnn::test::run_dtnn(synth + refused);
    CHECK(c.status == dtnn::kUnsupportedExit);
    CHECK(dtnn::test::one_line_error(c));
  }
  const dtnn::test::Command wrong_ranks = dtnn::test::run_dtnn(synth + "--mpi_processes=4");
  CHECK(wrong_ranks.err.find("--mpi_processes=4 but 1 rank was started") != std::string::npos);
  // PyDTNN's name for the canonical ResNet-50 v1.5 the zoo builds as resnet50_imagenet.
  const dtnn::test::Command models = dtnn::test::run_dtnn("models");
  const auto params_of = [&](const std::string& name) {
    const size_t at = models.out.find("\n" + name + " ");
    REQUIRE(at != std::string::npos);
    const std::string line = models.out.substr(at + 1, models.out.find('\n', at + 1) - at - 1).substr(name.size());
    return line.substr(line.find_first_not_of(' '));
  };
  CHECK(params_of("resnet50v15_imagenet") == params_of("resnet50_imagenet"));
}

TEST_CASE("option table: PyDTNN's README command line trains as written",
          "[options][cli]") {
  // The README's example, option names, values and case as PyDTNN writes them, its relative data path
  // included (a temporary directory with datasets/mnist -> the repository's MNIST subset).
  const std::string root = dtnn::test::temp_path("pydtnn_readme");
  fs::remove_all(root);
  fs::create_directories(root + "/datasets");
  fs::create_directories(root + "/work");
  fs::create_directory_symlink(std::string(DTNN_SOURCE_DIR) + "/experiments/datasets/mnist-10k", root + "/datasets/mnist");
  const std::string readme =
      "--model=simplecnn --dataset=mnist --dataset_train_path=../datasets/mnist --dataset_test_path=../datasets/mnist "
      "--batch_size=64 --validation_split=0.2 --num_epochs=10 --optimizer=Adam --learning_rate=0.01 "
      "--loss_func=categorical_accuracy,categorical_cross_entropy --parallel=data --blocking_mpi --dtype=float32 "
      "--evaluate";
  const auto run_here = [&](const std::string& args) {
    const std::string out = root + "/out.txt", err = root + "/err.txt";
    const int rc = std::system(("cd " + root + "/work && " + DTNN_BINARY + " train " + args + " > " + out + " 2> " +
                                err).c_str());
    std::ifstream o(out), e(err);
    std::stringstream so, se;
    so << o.rdbuf();
    se << e.rdbuf();
    return dtnn::test::Command{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, so.str(), se.str()};
  };
  // One epoch here (the later --num_epochs wins), to keep the test short.
  const dtnn::test::Command ok = run_here(readme + " --num_epochs=1 --progress=False");
  INFO(ok.err);
  CHECK(ok.status == 0);
  CHECK(ok.out.find("Training throughput") != std::string::npos);
  CHECK(ok.out.find("optimizer                      : adam") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("option table: the schedulers' default metrics follow a loss other than categorical cross-entropy",
          "[options][cli]") {
  {
    dtnn::TrainOptions o;
    o.loss_func = "binary_cross_entropy";
    o.lr_schedulers.reduce_lr_on_plateau_metric = "val_categorical_accuracy";
    dtnn::resolve_options(o, {"loss_func", "reduce_lr_on_plateau_metric"});
    CHECK(o.lr_schedulers.early_stopping_metric == "val_binary_cross_entropy");
    CHECK(o.lr_schedulers.model_checkpoint_metric == "val_binary_cross_entropy");
    CHECK(o.lr_schedulers.stop_at_loss_metric == "binary_cross_entropy");
    CHECK(o.lr_schedulers.reduce_lr_on_plateau_metric == "val_categorical_accuracy");  // given: kept
  }
  {
    dtnn::TrainOptions o;  // PyDTNN's loss: PyDTNN's defaults
    dtnn::resolve_options(o, {});
    CHECK(o.lr_schedulers.early_stopping_metric == "val_categorical_cross_entropy");
    CHECK(o.lr_schedulers.stop_at_loss_metric == "categorical_cross_entropy");
  }
  // A real run: it failed at start-up with "unknown metric 'val_categorical_cross_entropy'" before.
  const std::string run = "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --num_epochs=2 "
                          "--loss_func=binary_cross_entropy --validation_split=0.2 --evaluate_on_test=False "
                          "--progress=False --lr_schedulers=early_stopping,reduce_lr_on_plateau,stop_at_loss";
  const dtnn::test::Command ok = dtnn::test::run_dtnn(run);
  INFO(ok.out << ok.err);
  CHECK(ok.status == 0);
  // A metric named explicitly is still checked against the loss that is there.
  const dtnn::test::Command named = dtnn::test::run_dtnn(run + " --early_stopping_metric=val_categorical_cross_entropy");
  CHECK(named.status == 1);
  CHECK_THAT(named.err, Catch::Contains("unknown metric 'val_categorical_cross_entropy'"));
}
