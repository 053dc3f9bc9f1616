// Experiment matrices: expansion, rendering, every validation error (file:line and key), the hash, filters,
// and that the parameter table matches the `dtnn train` options.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "experiments/matrix.h"
#include "train/options.h"

using Catch::Contains;
using Catch::StartsWith;

namespace {

const char* const kPath = "experiments/x.toml";

dtnn::Matrix parse(const std::string& text) { return dtnn::parse_matrix(text, kPath); }

std::vector<std::string> labels(const std::vector<dtnn::Trial>& trials) {
  std::vector<std::string> out;
  for (const dtnn::Trial& t : trials) out.push_back(t.label);
  return out;
}

// 2 models x 3 algorithms x 2 rank counts = 12, minus an exclude of 2, plus 1 include = 11.
const char* const kGrid = R"(name = "grid"
description = "models by algorithms by ranks"
repeats = 3
timeout_s = 600
tags = ["ci", "conv"]
[base]
dataset = "mnist"
num_epochs = 1
[axes]
model = ["simplecnn", "simplemlp"]
conv_algo = ["auto", "im2col_gemm", "cpu.im2row_gemm"]
ranks = [1, 2]
[[exclude]]
model = "simplemlp"
conv_algo = "cpu.im2col_gemm"
[[include]]
model = "simplemlp"
ranks = 4
)";

}  // namespace

TEST_CASE("matrix: expansion is the axes product minus excludes plus includes", "[matrix]") {
  const dtnn::Matrix m = parse(kGrid);
  CHECK(m.name == "grid");
  CHECK(m.description == "models by algorithms by ranks");
  CHECK(m.path == kPath);
  CHECK(m.text == kGrid);
  CHECK(m.hash == dtnn::sha256_hex(kGrid));
  CHECK(m.repeats == 3);
  CHECK(m.timeout_s == 600.0);
  CHECK(m.tags == std::vector<std::string>{"ci", "conv"});
  CHECK(m.launcher.kind == "mpirun");
  CHECK(m.launcher.hostfile.empty());
  // Declaration order, not toml++'s sorted order.
  CHECK(m.axis_names == std::vector<std::string>{"model", "conv_algo", "ranks"});
  REQUIRE(m.trials.size() == 11);

  // First axis slowest; the short algorithm name is stored under the registry's full name.
  const std::vector<std::string> expected = {
      "model=simplecnn;conv_algo=auto;ranks=1",
      "model=simplecnn;conv_algo=auto;ranks=2",
      "model=simplecnn;conv_algo=cpu.im2col_gemm;ranks=1",
      "model=simplecnn;conv_algo=cpu.im2col_gemm;ranks=2",
      "model=simplecnn;conv_algo=cpu.im2row_gemm;ranks=1",
      "model=simplecnn;conv_algo=cpu.im2row_gemm;ranks=2",
      "model=simplemlp;conv_algo=auto;ranks=1",
      "model=simplemlp;conv_algo=auto;ranks=2",
      "model=simplemlp;conv_algo=cpu.im2row_gemm;ranks=1",
      "model=simplemlp;conv_algo=cpu.im2row_gemm;ranks=2",
      "model=simplemlp;ranks=4",
  };
  CHECK(labels(m.trials) == expected);

  // Keys: every param (base included) in name order.
  CHECK(m.trials[3].key == "conv_algo=cpu.im2col_gemm;dataset=mnist;model=simplecnn;num_epochs=1;ranks=2");
  CHECK(m.trials[10].key == "dataset=mnist;model=simplemlp;num_epochs=1;ranks=4");
  std::set<std::string> keys;
  for (const dtnn::Trial& t : m.trials) keys.insert(t.key);
  CHECK(keys.size() == m.trials.size());

  CHECK(m.trials[3].ranks() == 2);
  CHECK(m.trials[10].ranks() == 4);
  CHECK(m.trials[3].framework() == "dtnn");
  CHECK(m.trials[3].get("model") == "simplecnn");
  CHECK(m.trials[3].get("seed", "7") == "7");
  CHECK(m.trials[10].get("conv_algo").empty());
}

TEST_CASE("matrix: no axes is one trial from base", "[matrix]") {
  for (const char* axes : {"", "[axes]\n"}) {
    const dtnn::Matrix m = parse(std::string("name = \"one\"\n[base]\nmodel = \"simplemlp\"\n") + axes);
    REQUIRE(m.trials.size() == 1);
    CHECK(m.trials[0].key == "model=simplemlp");
    CHECK(m.trials[0].label.empty());
    CHECK(m.trials[0].ranks() == 1);
    CHECK(m.axis_names.empty());
    CHECK(m.repeats == 1);
  }
  const dtnn::Matrix bare = parse("name = \"bare\"\n");
  REQUIRE(bare.trials.size() == 1);
  CHECK(bare.trials[0].key.empty());
}

TEST_CASE("matrix: the key names the configuration, not how the matrix spells it", "[matrix]") {
  const dtnn::Matrix a = parse(R"(name = "a"
[base]
model = "simplecnn"
learning_rate = 0.010
[axes]
ranks = [2]
framework = ["pytorch", "dtnn"]
)");
  const dtnn::Matrix b = parse(R"(name = "b"
[base]
ranks = 2
framework = "pytorch"
[axes]
learning_rate = [1e-2]
model = ["simplecnn"]
)");
  REQUIRE(a.trials.size() == 2);
  REQUIRE(b.trials.size() == 1);
  CHECK(a.trials[0].key == b.trials[0].key);
  CHECK(a.trials[0].key == "framework=pytorch;learning_rate=0.01;model=simplecnn;ranks=2");
  CHECK(a.trials[0].framework() == "pytorch");
  CHECK(a.trials[1].framework() == "dtnn");
  CHECK(a.trials[0].label == "ranks=2;framework=pytorch");
  CHECK(b.trials[0].label == "learning_rate=0.01;model=simplecnn");
}

TEST_CASE("matrix: values render as a user would type them", "[matrix]") {
  const dtnn::Matrix m = parse(R"(name = "render"
[base]
learning_rate = 0.001
momentum = 0
beta2 = 0.0
epsilon = 1e-7
decay = 0.1
nesterov = true
evaluate = false
batch_size = 64
seed = 0
metrics = "categorical_accuracy"
device = "gpu"
)");
  REQUIRE(m.trials.size() == 1);
  const dtnn::Trial& t = m.trials[0];
  CHECK(t.get("learning_rate") == "0.001");
  CHECK(t.get("momentum") == "0");  // a TOML integer
  CHECK(t.get("beta2") == "0");     // a TOML float
  CHECK(t.get("epsilon") == "1e-07");
  CHECK(std::stod(t.get("epsilon")) == 1e-7);
  CHECK(t.get("decay") == "0.1");
  CHECK(t.get("nesterov") == "True");
  CHECK(t.get("evaluate") == "False");
  CHECK(t.get("batch_size") == "64");
  CHECK(t.get("seed") == "0");
  CHECK(t.get("metrics") == "categorical_accuracy");
  CHECK(t.get("device") == "gpu");

  // A value that needs all 17 digits survives the round trip.
  const dtnn::Matrix r = parse("name = \"r\"\n[base]\nlearning_rate = 0.30000000000000004\n");
  CHECK(std::stod(r.trials[0].get("learning_rate")) == 0.30000000000000004);
  CHECK(parse("name = \"t\"\ntimeout_s = 1.5\n").timeout_s == 1.5);
}

TEST_CASE("matrix: launcher", "[matrix]") {
  const dtnn::Matrix m = dtnn::parse_matrix(R"(name = "l"
[launcher]
kind = "mpirun"
hostfile = "hosts.txt"
args = ["--bind-to", "core"]
)",
                                            "/srv/exp/m.toml");
  CHECK(m.launcher.kind == "mpirun");
  CHECK(m.launcher.hostfile == "/srv/exp/hosts.txt");
  CHECK(m.launcher.args == std::vector<std::string>{"--bind-to", "core"});

  const dtnn::Matrix abs = dtnn::parse_matrix("name = \"a\"\n[launcher]\nhostfile = \"/etc/hosts\"\n", "m.toml");
  CHECK(abs.launcher.hostfile == "/etc/hosts");
  const dtnn::Matrix rel = dtnn::parse_matrix("name = \"a\"\n[launcher]\nhostfile = \"h\"\n", "m.toml");
  CHECK(rel.launcher.hostfile == (std::filesystem::current_path() / "h").lexically_normal().string());
  CHECK(parse("name = \"s\"\n[launcher]\nkind = \"srun\"\n").launcher.kind == "srun");
}

TEST_CASE("matrix: errors name the file, the line and the key", "[matrix]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const std::vector<Case> cases = {
      // top level
      {"name = \"x\"\nfoo = 1\n", "experiments/x.toml:2: unknown key 'foo'"},
      {"description = \"no name\"\n", "experiments/x.toml: missing the required key 'name'"},
      {"name = \"\"\n", "experiments/x.toml:1: 'name': expected a non-empty string"},
      {"name = 3\n", "experiments/x.toml:1: 'name': expected a non-empty string (got 3)"},
      {"name = \"x\"\ndescription = 1\n", "experiments/x.toml:2: 'description': expected a string"},
      {"name = \"x\"\nrepeats = 0\n", "experiments/x.toml:2: 'repeats': expected a positive integer (got 0)"},
      {"name = \"x\"\nrepeats = 1.5\n", "experiments/x.toml:2: 'repeats': expected a positive integer (got 1.5)"},
      {"name = \"x\"\ntimeout_s = -1\n", "experiments/x.toml:2: 'timeout_s': expected a positive number"},
      {"name = \"x\"\ntimeout_s = 1e300\n",
       "experiments/x.toml:2: 'timeout_s': expected a positive number of seconds up to 1e7"},
      {"name = \"x\"\ntimeout_s = \"1h\"\n", "experiments/x.toml:2: 'timeout_s'"},
      {"name = \"x\"\ntags = [\"a\", 1]\n", "experiments/x.toml:2: 'tags': expected a list of strings (got 1)"},
      {"name = \"x\"\ntags = \"a\"\n", "experiments/x.toml:2: 'tags': expected a list of strings"},
      {"name = \"x\"\ntags = [\"ci\", \"a,b\"]\n", "experiments/x.toml:2: 'tags': a tag may not hold a comma"},
      {"name = \"x\"\nbase = 3\n", "experiments/x.toml:2: 'base': expected a table (got 3)"},
      {"name = \"x\"\naxes = [1]\n", "experiments/x.toml:2: 'axes': expected a table"},
      // launcher
      {"name = \"x\"\n[launcher]\nkind = \"ssh\"\n",
       "experiments/x.toml:3: launcher 'kind': expected one of mpirun, srun, none (got \"ssh\")"},
      {"name = \"x\"\n[launcher]\nkind = \"srun\"\nhostfile = \"h\"\n",
       "experiments/x.toml:4: launcher 'hostfile': only mpirun takes a hostfile"},
      {"name = \"x\"\n[launcher]\nhosts = \"h\"\n", "experiments/x.toml:3: launcher: unknown key 'hosts'"},
      {"name = \"x\"\n[launcher]\nargs = [\"-v\", 2]\n",
       "experiments/x.toml:3: launcher 'args': expected a list of strings"},
      // base: names and types
      {"name = \"x\"\n[base]\nbatchsize = 64\n", "experiments/x.toml:3: base: unknown parameter 'batchsize'"},
      {"name = \"x\"\n[base]\nreport = \"r.json\"\n", "experiments/x.toml:3: base: 'report' is set by the runner"},
      {"name = \"x\"\n[base]\nparallel = \"data\"\n", "experiments/x.toml:3: base: 'parallel' is set by the runner"},
      {"name = \"x\"\n[base]\nbatch_size = \"64\"\n",
       "experiments/x.toml:3: base 'batch_size': expected a positive integer (got \"64\")"},
      {"name = \"x\"\n[base]\nbatch_size = 1.5\n",
       "experiments/x.toml:3: base 'batch_size': expected a positive integer (got 1.5)"},
      {"name = \"x\"\n[base]\nbatch_size = 0\n",
       "experiments/x.toml:3: base 'batch_size': expected a positive integer (got 0)"},
      {"name = \"x\"\n[base]\nnum_epochs = -1\n",
       "experiments/x.toml:3: base 'num_epochs': expected a non-negative integer"},
      {"name = \"x\"\n[base]\nsteps_per_epoch = -2\n",
       "experiments/x.toml:3: base 'steps_per_epoch': expected a non-negative integer"},
      {"name = \"x\"\n[base]\nthreads = -1\n", "experiments/x.toml:3: base 'threads': expected a non-negative integer"},
      {"name = \"x\"\n[base]\nseed = -1\n", "experiments/x.toml:3: base 'seed': expected a non-negative integer"},
      {"name = \"x\"\n[base]\nranks = 0\n", "experiments/x.toml:3: base 'ranks': expected a positive integer (got 0)"},
      {"name = \"x\"\n[base]\nlearning_rate = \"fast\"\n",
       "experiments/x.toml:3: base 'learning_rate': expected a number (got \"fast\")"},
      {"name = \"x\"\n[base]\nlearning_rate = nan\n", "experiments/x.toml:3: base 'learning_rate': expected a number"},
      {"name = \"x\"\n[base]\nnesterov = \"True\"\n", "experiments/x.toml:3: base 'nesterov': expected a boolean"},
      {"name = \"x\"\n[base]\nhistory_file = 1\n",
       "experiments/x.toml:3: base 'history_file': expected a string (got 1)"},
      // base: enumerations
      {"name = \"x\"\n[base]\nmodel = \"resnet\"\n",
       "experiments/x.toml:3: base 'model': unknown model 'resnet' (known: simplecnn"},
      {"name = \"x\"\n[base]\nmodel = 1\n", "experiments/x.toml:3: base 'model': expected a string (got 1)"},
      {"name = \"x\"\n[base]\nconv_algo = \"fft\"\n",
       "experiments/x.toml:3: base 'conv_algo': unknown convolution algorithm 'fft'"},
      {"name = \"x\"\n[base]\ndataset = \"svhn\"\n",
       "experiments/x.toml:3: base 'dataset': unknown dataset 'svhn'"},
      {"name = \"x\"\n[base]\ntensor_format = \"nhcw\"\n",
       "experiments/x.toml:3: base 'tensor_format': expected one of NHWC, NCHW, AUTO, got 'nhcw'"},
      {"name = \"x\"\n[base]\noptimizer = \"adagrad\"\n",
       "experiments/x.toml:3: base 'optimizer': expected one of sgd, rmsprop, adam, nadam"},
      {"name = \"x\"\n[base]\nloss_func = \"mse\"\n",
       "experiments/x.toml:3: base 'loss_func': expected one of categorical_cross_entropy"},
      {"name = \"x\"\n[base]\ndevice = \"tpu\"\n", "experiments/x.toml:3: base 'device': expected one of cpu, gpu"},
      {"name = \"x\"\n[base]\nframework = \"jax\"\n",
       "experiments/x.toml:3: base 'framework': expected one of dtnn, pytorch, pydtnn"},
      // axes
      {"name = \"x\"\n[axes]\nmodel = [\"simplecnn\"]\nranks = [1, \"two\"]\n",
       "experiments/x.toml:4: axis 'ranks': expected a list of positive integers (got \"two\")"},
      {"name = \"x\"\n[axes]\nranks = [0, 1]\n",
       "experiments/x.toml:3: axis 'ranks': expected a list of positive integers (got 0)"},
      {"name = \"x\"\n[axes]\nmodel = \"simplecnn\"\n",
       "experiments/x.toml:3: axis 'model': expected a non-empty list of strings (got \"simplecnn\")"},
      {"name = \"x\"\n[axes]\nmodel = []\n",
       "experiments/x.toml:3: axis 'model': expected a non-empty list of strings (got an empty list)"},
      {"name = \"x\"\n[axes]\nranks = [1, 2, 1]\n", "experiments/x.toml:3: axis 'ranks': value '1' appears twice"},
      {"name = \"x\"\n[axes]\nlearning_rate = [0.1, 0.10]\n",
       "experiments/x.toml:3: axis 'learning_rate': value '0.1' appears twice"},
      {"name = \"x\"\n[axes]\nconv_algo = [\"im2col_gemm\", \"cpu.im2col_gemm\"]\n",
       "experiments/x.toml:3: axis 'conv_algo': value 'cpu.im2col_gemm' appears twice"},
      {"name = \"x\"\n[axes]\nmodel = [\"simplecnn\", \"vgg\"]\n",
       "experiments/x.toml:3: axis 'model': unknown model 'vgg'"},
      {"name = \"x\"\n[axes]\nnesterov = [true, 1]\n",
       "experiments/x.toml:3: axis 'nesterov': expected a list of booleans"},
      {"name = \"x\"\n[axes]\nbatchsize = [1]\n", "experiments/x.toml:3: axes: unknown parameter 'batchsize'"},
      {"name = \"x\"\n[base]\nmodel = \"simplecnn\"\n[axes]\nmodel = [\"simplemlp\"]\n",
       "experiments/x.toml:5: axis 'model': also set in [base] (line 3)"},
      // exclude
      {"name = \"x\"\n[axes]\nranks = [1, 2]\n[[exclude]]\nseed = 1\n",
       "experiments/x.toml:4: exclude #1: 'seed' is neither an axis nor set in [base]"},
      {"name = \"x\"\n[axes]\nranks = [1, 2]\n[[exclude]]\nranks = 1\n[[exclude]]\nranks = 3\n",
       "experiments/x.toml:6: exclude #2 matches no trial"},
      {"name = \"x\"\n[axes]\nranks = [1, 2]\n[[exclude]]\n", "experiments/x.toml:4: exclude #1: empty rule"},
      {"name = \"x\"\n[axes]\nranks = [1, 2]\n[[exclude]]\nrank = 1\n",
       "experiments/x.toml:5: exclude #1: unknown parameter 'rank'"},
      {"name = \"x\"\n[axes]\nranks = [1, 2]\n[[exclude]]\nranks = \"1\"\n",
       "experiments/x.toml:5: exclude #1 'ranks': expected a positive integer (got \"1\")"},
      {"name = \"x\"\nexclude = 3\n", "experiments/x.toml:2: 'exclude': expected [[exclude]] tables"},
      {"name = \"x\"\nexclude = [3]\n", "experiments/x.toml:2: 'exclude #1': expected a table (got 3)"},
      {"name = \"x\"\n[axes]\nmodel = [\"simplecnn\", \"simplemlp\"]\nconv_algo = [\"auto\", \"cpu.im2col_gemm\"]\n"
       "[[exclude]]\nconv_algo = \"im2col_gemm\"\n",
       "experiments/x.toml:4: axis 'conv_algo' value 'cpu.im2col_gemm': every trial with it is excluded"},
      {"name = \"x\"\n[base]\nseed = 1\n[[exclude]]\nseed = 1\n", "experiments/x.toml: the excludes leave no trial"},
      // include
      {"name = \"x\"\n[axes]\nmodel = [\"simplecnn\", \"simplemlp\"]\nranks = [1, 2]\n[[include]]\nranks = 2\nmodel = "
       "\"simplemlp\"\n",
       "experiments/x.toml:5: include #1 duplicates trial 'model=simplemlp;ranks=2'"},
      {"name = \"x\"\n[[include]]\nranks = 4\n[[include]]\nranks = 4\n",
       "experiments/x.toml:4: include #2 duplicates trial 'ranks=4'"},
      {"name = \"x\"\n[[include]]\nranks = 0\n",
       "experiments/x.toml:3: include #1 'ranks': expected a positive integer (got 0)"},
      {"name = \"x\"\n[[include]]\nmodels = \"simplecnn\"\n",
       "experiments/x.toml:3: include #1: unknown parameter 'models'"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    REQUIRE_THROWS_AS(parse(c.text), dtnn::Error);
    REQUIRE_THROWS_WITH(parse(c.text), StartsWith(c.message));
  }
}

TEST_CASE("matrix: the name cannot leave the log directory", "[matrix]") {
  for (const char* name : {"/tmp/x", "../../escaped", "a/b", "..", ".hidden", "-x", "a..b", "x y"}) {
    INFO(name);
    REQUIRE_THROWS_WITH(parse(std::string("name = \"") + name + "\"\n"),
                        StartsWith(std::string("experiments/x.toml:1: 'name': expected letters, digits")) &&
                            Contains(std::string("(got \"") + name + "\")"));
  }
  for (const char* name : {"quickstart", "conv_algos_cpu", "gpu-h100.v2", "0"})
    CHECK(parse(std::string("name = \"") + name + "\"\n").name == name);
}

TEST_CASE("matrix: a float where an integer belongs is shown as a float", "[matrix]") {
  REQUIRE_THROWS_WITH(parse("name = \"x\"\n[base]\nbatch_size = 64.0\n"),
                      "experiments/x.toml:3: base 'batch_size': expected a positive integer (got 64.0)");
  REQUIRE_THROWS_WITH(parse("name = \"x\"\nrepeats = 2.0\n"),
                      "experiments/x.toml:2: 'repeats': expected a positive integer (got 2.0)");
  REQUIRE_THROWS_WITH(parse("name = \"x\"\n[axes]\nranks = [1, 2.0]\n"),
                      "experiments/x.toml:3: axis 'ranks': expected a list of positive integers (got 2.0)");
}

TEST_CASE("matrix: TOML syntax errors and unreadable files", "[matrix]") {
  REQUIRE_THROWS_WITH(parse("name = \"x\"\n[base]\nseed = = 1\n"), StartsWith("experiments/x.toml:3: "));
  REQUIRE_THROWS_WITH(parse("name = \"x\"\nname = \"y\"\n"), StartsWith("experiments/x.toml:2: "));
  REQUIRE_THROWS_WITH(dtnn::load_matrix("/nonexistent/x.toml"),
                      "/nonexistent/x.toml: cannot read the file (No such file or directory)");
  const auto dir = std::filesystem::temp_directory_path();
  REQUIRE_THROWS_WITH(dtnn::load_matrix(dir.string()), Contains("cannot read the file"));

  const auto file = dir / ("dtnn_test_matrix_" + std::to_string(::getpid()) + ".toml");  // two ctest runs at once
  {
    std::ofstream out(file);
    out << "name = \"loaded\"\n[launcher]\nhostfile = \"hosts\"\n";
  }
  const dtnn::Matrix m = dtnn::load_matrix(file.string());
  CHECK(m.name == "loaded");
  CHECK(m.path == file.string());
  CHECK(m.launcher.hostfile == (dir / "hosts").lexically_normal().string());
  std::filesystem::remove(file);
}

TEST_CASE("matrix: filter_trials keeps trials matching every name=value", "[matrix]") {
  const dtnn::Matrix m = parse(kGrid);
  CHECK(dtnn::filter_trials(m.trials, {}).size() == 11);
  CHECK(dtnn::filter_trials(m.trials, {"model=simplecnn"}).size() == 6);
  CHECK(dtnn::filter_trials(m.trials, {"model=simplemlp", "ranks=4"}).size() == 1);
  CHECK(dtnn::filter_trials(m.trials, {"model=simplemlp", "ranks=3"}).empty());
  CHECK(dtnn::filter_trials(m.trials, {"conv_algo=im2col_gemm"}).size() == 2);
  CHECK(dtnn::filter_trials(m.trials, {"conv_algo=cpu.im2col_gemm"}).size() == 2);
  CHECK(dtnn::filter_trials(m.trials, {"framework=dtnn"}).size() == 11);  // the default
  CHECK(dtnn::filter_trials(m.trials, {"dataset=mnist", "ranks=2"}).size() == 5);
  const auto kept = dtnn::filter_trials(m.trials, {"ranks=1", "model=simplemlp"});
  CHECK(labels(kept) == std::vector<std::string>{"model=simplemlp;conv_algo=auto;ranks=1",
                                                 "model=simplemlp;conv_algo=cpu.im2row_gemm;ranks=1"});
  REQUIRE_THROWS_WITH(dtnn::filter_trials(m.trials, {"model"}), Contains("filter 'model': expected name=value"));
  REQUIRE_THROWS_WITH(dtnn::filter_trials(m.trials, {"=x"}), Contains("expected name=value"));
  REQUIRE_THROWS_WITH(dtnn::filter_trials(m.trials, {"modle=simplecnn"}), Contains("unknown parameter 'modle'"));
}

TEST_CASE("matrix: filter_trials reads booleans as the CLI does", "[matrix]") {
  const dtnn::Matrix m = parse("name = \"b\"\n[base]\ndataset = \"mnist\"\n[axes]\nmodel = [\"simplecnn\"]\n"
                               "allow_tf32 = [false, true]\n");
  REQUIRE(m.trials.size() == 2);
  for (const char* f : {"allow_tf32=false", "allow_tf32=False", "allow_tf32=0"}) {
    const auto kept = dtnn::filter_trials(m.trials, {f});
    REQUIRE(kept.size() == 1);
    CHECK(kept[0].get("allow_tf32") == "False");
  }
  for (const char* f : {"allow_tf32=TRUE", "allow_tf32=1"}) CHECK(dtnn::filter_trials(m.trials, {f}).size() == 1);
  REQUIRE_THROWS_WITH(dtnn::filter_trials(m.trials, {"allow_tf32=maybe"}), Contains("allow_tf32 is a boolean"));
}

TEST_CASE("matrix: every matrix option's default is a valid matrix value of its kind", "[matrix]") {
  // Which options a matrix takes is the option table's (tests/experiments/test_option_table.cpp).
  const dtnn::TrainOptions defaults;
  const auto& names = dtnn::matrix_option_names();
  for (const char* own : {"ranks", "device", "framework", "report", "parallel"})
    CHECK(std::find(names.begin(), names.end(), own) == names.end());
  for (const auto& [name, value] : dtnn::options_list(defaults)) {
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    std::string toml_value = "\"" + value + "\"";
    if (value == "True" || value == "False")
      toml_value = value == "True" ? "true" : "false";
    else if (!value.empty() && (std::isdigit(static_cast<unsigned char>(value[0])) || value[0] == '-'))
      toml_value = value;
    INFO(name << " = " << toml_value);
    const dtnn::Matrix m = parse("name = \"d\"\n[base]\n" + name + " = " + toml_value + "\n");
    CHECK(m.trials[0].get(name) == value);
  }
}

TEST_CASE("matrix: every experiments/*.toml in the repository loads", "[matrix]") {
  const std::filesystem::path dir = std::filesystem::path(DTNN_SOURCE_DIR) / "experiments";
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    INFO(entry.path().string());
    const dtnn::Matrix m = dtnn::load_matrix(entry.path().string());
    CHECK(!m.trials.empty());
    ++loaded;
  }
  CHECK(loaded >= 10);  // the repository ships more than that: none found is a wrong path, not a pass
}

// The matrices shipped in experiments/ are user-facing: each must parse and expand.
TEST_CASE("matrix: every experiments/*.toml parses and expands", "[harness]") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DTNN_SOURCE_DIR) + "/experiments")) {
    if (entry.path().extension() != ".toml") continue;
    INFO(entry.path().string());
    const dtnn::Matrix m = dtnn::load_matrix(entry.path().string());
    CHECK_FALSE(m.trials.empty());
    ++files;
  }
  CHECK(files >= 3);
}

TEST_CASE("matrix: absurd input is refused before it is parsed or expanded", "[matrix]") {
  // 10 axes of 10 values: 10^10 trials, which would exhaust memory if materialised.
  std::string big = "name = \"big\"\n[axes]\n";
  const char* axes[] = {"batch_size", "num_epochs", "steps_per_epoch", "seed", "warm_up_epochs",
                        "early_stopping_patience", "reduce_lr_on_plateau_patience", "crop_images_padding",
                        "reduce_lr_every_nepochs_nepochs", "model_checkpoint_save_freq"};
  for (const char* a : axes) big += std::string(a) + " = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  CHECK_THROWS_WITH(parse(big), Catch::Contains("expand to more than 100000 trials (10 x 10 x 10") &&
                                    Catch::Contains("at most 100000"));
  // Just under the cap expands (5 axes of 10 = 100,000 is the limit itself).
  std::string ok = "name = \"ok\"\n[axes]\n";
  for (int i = 0; i < 4; ++i) ok += std::string(axes[i]) + " = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  CHECK(parse(ok).trials.size() == 10000);
  // 50,000 levels of dotted keys or arrays overflowed the TOML parser's stack.
  std::string dotted = "name = \"d\"\n";
  for (int i = 0; i < 50000; ++i) dotted += "a.";
  CHECK_THROWS_WITH(parse(dotted + "a = 1\n"), Catch::Contains(":2: tables, arrays or dotted keys nested more than 32"));
  CHECK_THROWS_WITH(parse("name = \"d\"\nx = " + std::string(50000, '[') + std::string(50000, ']') + "\n"),
                    Catch::Contains("nested more than 32"));
  // Brackets inside strings and comments do not count.
  CHECK_NOTHROW(parse("name = \"d\" # " + std::string(100, '[') + "\ndescription = \"" + std::string(100, '{') + "\"\n"));
  // A launcher that starts no ranks, with a trial of two: refused at load, not when that trial comes.
  CHECK_THROWS_WITH(parse("name = \"n\"\n[launcher]\nkind = \"none\"\n[axes]\nranks = [1, 2]\n"),
                    Catch::Contains("launcher kind 'none' cannot start 2 ranks"));
  // nodes x ranks_per_node past INT_MAX wrapped to 0 ranks (srun -n 0) or to a wrong count.
  CHECK_THROWS_WITH(parse("name = \"o\"\n[launcher]\nkind = \"srun\"\n[base]\nnodes = 65536\nranks_per_node = 65536\n"),
                    Catch::Contains("65536 x 65536 = 4294967296 ranks, more than MPI can number"));
  // Every run is planned before the first starts: repeats = 2^31 - 1 filled memory first.
  CHECK_THROWS_WITH(parse("name = \"r\"\nrepeats = 2147483647\n"),
                    Catch::Contains("1 trial(s) x repeats = 2147483647 is more than the 100000 runs"));
  CHECK(parse("name = \"r\"\nrepeats = 100000\n").repeats == 100000);
  // A file without an end is refused at the size limit, not read until memory runs out.
  CHECK_THROWS_WITH(dtnn::load_matrix("/dev/zero"), Catch::Contains("larger than 4194304 bytes"));
}

TEST_CASE("matrix: one configuration twice, and parameters a trial would not honour, are refused", "[matrix]") {
  const std::string head = "name = \"d\"\n[base]\nuse_synthetic_data = true\n";
  // Defaults written out: the same command as the trial that leaves them out (these ran it three times).
  for (const char* include : {"[[include]]\nmodel = \"simplecnn\"\nranks = 1\n",
                              "[[include]]\nmodel = \"simplecnn\"\nframework = \"dtnn\"\ndevice = \"cpu\"\n",
                              "[[include]]\nmodel = \"simplecnn\"\nthreads = 0\n"}) {
    INFO(include);
    CHECK_THROWS_WITH(parse(head + "[axes]\nmodel = [\"simplecnn\", \"simplemlp\"]\n" + include),
                      Contains("are one configuration"));
  }
  CHECK_THROWS_WITH(parse(head + "[axes]\nranks = [1]\n[[include]]\n"), Contains("include #1: empty"));
  // dtnn train takes --global_batch_size over --batch_size: two trials would train at one batch.
  CHECK_THROWS_WITH(parse(head + "global_batch_size = 128\n[axes]\nbatch_size = [32, 64]\n"),
                    Contains("do not also set batch_size"));
  // device is the runner's --enable_gpu; a second spelling could contradict it (and store the other device).
  CHECK_THROWS_WITH(parse(head + "enable_gpu = true\n"), Contains("a matrix sets device = \"gpu\""));
  // platform and predictor are read by predicted trials only: on measured ones they ran one thing 4 times.
  CHECK_THROWS_WITH(parse(head + "[axes]\nplatform = [\"eth10g\", \"ib100\"]\n"),
                    Contains("platform applies to predicted trials"));
  CHECK_NOTHROW(parse(head + "mode = \"predict\"\n[axes]\nranks = [2, 4]\nplatform = [\"eth10g\", \"ib100\"]\n"));
}

TEST_CASE("matrix: --only takes values as trials hold them, and an absent parameter as its default", "[matrix]") {
  const dtnn::Matrix m = parse("name = \"d\"\n[base]\nlearning_rate = 0.001\ntensor_format = \"NHWC\"\n"
                               "[axes]\nmodel = [\"simplecnn\", \"simplemlp\"]\n");
  CHECK(dtnn::filter_trials(m.trials, {"tensor_format=nhwc"}).size() == 2);
  CHECK(dtnn::filter_trials(m.trials, {"learning_rate=1e-3"}).size() == 2);
  CHECK(dtnn::filter_trials(m.trials, {"device=cpu"}).size() == 2);  // not set: its default
  CHECK(dtnn::filter_trials(m.trials, {"scaling=weak", "mode=run", "ranks=1"}).size() == 2);
  CHECK(dtnn::filter_trials(m.trials, {"device=gpu"}).empty());
  CHECK(dtnn::filter_trials(m.trials, {"threads=0"}).size() == 2);  // the option table's default
  CHECK(dtnn::parameter_default("nodes").empty());  // a layout is never the same as none
  CHECK(dtnn::without_defaults({{"ranks", "1"}, {"threads", "0"}, {"model", "simplemlp"}}) ==
        std::map<std::string, std::string>{{"model", "simplemlp"}});
}

TEST_CASE("matrix: nesting is counted in inline tables' keys, not in multi-line strings", "[matrix]") {
  // toml++ nests a table per dot of a key inside an inline table too: 150,000 of them overflowed the stack
  // (dtnn run was killed by SIGSEGV); the scan counted dots only before a line's '='.
  std::string dotted = "a";
  for (int i = 0; i < 40; ++i) dotted += ".a";
  CHECK_THROWS_WITH(parse("name = \"x\"\nbase = {" + dotted + " = 1}\n"), Contains("nested more than 32 levels"));
  CHECK_THROWS_WITH(parse("name = \"x\"\nbase = {model = \"simplecnn\", " + dotted + " = 1}\n"),
                    Contains("nested more than 32 levels"));
  // Brackets and dots inside multi-line strings are text (they were counted as nesting).
  const std::string brackets(40, '['), version = "1" + std::string(40, '.');
  CHECK_NOTHROW(parse("name = \"x\"\ndescription = \"\"\"\n" + brackets + "\n" + version + "\n\"\"\"\n"));
  CHECK_NOTHROW(parse("name = \"x\"\ndescription = '''\n" + brackets + "\n'''\n"));
  CHECK_NOTHROW(parse("name = \"x\"\n[base]\nmodel = \"simplecnn\"  # " + brackets + "\n"));
}
