// Diverged runs through the harness: the runner stores a trial whose training loss became NaN as 'diverged'
// (with its report and epochs, no throughput or accuracy), and query, check and compare never count it as ok
// but say that it is there. The PyTorch reference's diverged runs too.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "skip.h"
#include "results/store.h"
#include "store_value.h"

using Catch::Contains;

using dtnn::test::one;

namespace {

namespace fs = std::filesystem;

int dtnn_cli(const std::string& args, const std::string& log) {
  const std::string cmd = std::string(DTNN_BINARY) + " " + args + " > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("runner: a diverged trial is stored 'diverged' and query, check and compare say so", "[runner]") {
  const fs::path dir = dtnn::test::temp_path("diverged_runs");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "dtnn.db").string(), log = (dir / "out.log").string();
  const std::string matrix = (dir / "lr.toml").string();
  // 3e38 makes simplemlp's first-epoch loss NaN or infinite; 0.01 trains normally.
  std::ofstream(matrix) << "name = \"lr\"\ntimeout_s = 60\nrepeats = 2\n[base]\nmodel = \"simplemlp\"\n"
                           "use_synthetic_data = true\nnum_epochs = 2\nsteps_per_epoch = 3\nthreads = 1\n"
                           "[axes]\nlearning_rate = [0.01, 3e38]\n";
  CHECK(dtnn_cli("run " + matrix + " --db " + db, log) == 1);  // a diverged run is news: exit 1
  CHECK_THAT(read_text(log), Contains("2 ok, 0 failed, 0 timeout, 0 unsupported, 2 diverged"));
  const std::string diverged = "status = 'diverged'";
  CHECK(one(db, "SELECT count(*) FROM runs WHERE " + diverged + " AND label LIKE '%e+38%'") == "2");
  // NaN or infinite, by the BLAS kernels' order of operations (inf on a Zen 5 VM, nan where this was written)
  CHECK_THAT(one(db, "SELECT min(error) FROM runs WHERE " + diverged),
             Contains("dtnn: diverged: the training loss (categorical_cross_entropy) is nan after epoch 1") ||
                 Contains("dtnn: diverged: the training loss (categorical_cross_entropy) is inf after epoch 1"));
  // The report and the epoch that diverged are kept; nothing to average is.
  CHECK(one(db, "SELECT count(*) FROM runs WHERE " + diverged + " AND report LIKE '%\"status\": \"diverged\"%'") == "2");
  CHECK(one(db, "SELECT count(*) FROM epochs JOIN runs ON runs.id = run_id WHERE " + diverged +
                    " AND train_loss IS NULL") == "2");
  CHECK(one(db, "SELECT count(*) FROM runs WHERE " + diverged + " AND samples_per_s IS NULL AND test_accuracy IS NULL "
                "AND val_accuracy IS NULL") == "2");
  CHECK(one(db, "SELECT count(*) FROM v_throughput") == "2");

  CHECK(dtnn_cli("query runs --db " + db, log) == 0);
  CHECK_THAT(read_text(log), Contains("diverged"));

  const std::string targets = (dir / "t.toml").string();
  std::ofstream(targets) << "[[target]]\nmodel = \"simplemlp\"\ndataset = \"synthetic-mnist\"\n"
                            "metric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\nsource = \"x\"\n"
                            "num_epochs = 2\noptimizer = \"sgd\"\nlearning_rate = 0.01\nbatch_size = 64\n"
                            "ranks = [1]\nsteps_per_epoch = 3\n";
  CHECK(dtnn_cli("check --db " + db + " --targets " + targets, log) == 0);
  CHECK_THAT(read_text(log), Contains("2 pass, 0 fail"));
  CHECK_THAT(read_text(log), Contains("2 diverged run(s) not checked"));

  // 2 ok runs a side: no verdict possible, so exit 2 (could not judge), not a pass.
  CHECK(dtnn_cli("compare --baseline runs=1-4 --candidate runs=1-4 --db " + db, log) == 2);
  CHECK_THAT(read_text(log), Contains("note: 2 baseline and 2 candidate run(s) diverged"));
  CHECK_THAT(read_text(log), Contains("over 1 trial(s)"));

  // --resume reruns nothing: the diverged repeats are results (the same seed diverges again), and the exit
  // status still says the matrix has diverged runs. One more repeat runs both trials once more.
  CHECK(dtnn_cli("run " + matrix + " --db " + db + " --resume", log) == 1);
  CHECK_THAT(read_text(log), Contains("0 run(s) to do, 4 already stored ok or diverged (2 diverged: not rerun)"));
  CHECK_THAT(read_text(log), Contains("2 diverged run(s) stored before were not rerun"));
  CHECK(one(db, "SELECT count(*) FROM runs") == "4");
  std::ofstream(matrix) << "name = \"lr\"\ntimeout_s = 60\nrepeats = 3\n[base]\nmodel = \"simplemlp\"\n"
                           "use_synthetic_data = true\nnum_epochs = 2\nsteps_per_epoch = 3\nthreads = 1\n"
                           "[axes]\nlearning_rate = [0.01, 3e38]\n";
  CHECK(dtnn_cli("run " + matrix + " --db " + db + " --resume", log) == 1);
  CHECK_THAT(read_text(log), Contains("2 run(s) to do, 4 already stored ok or diverged (2 diverged: not rerun)"));
  CHECK_THAT(read_text(log), Contains("1 ok, 0 failed, 0 timeout, 0 unsupported, 1 diverged"));
  CHECK(one(db, "SELECT count(*) FROM runs WHERE status = 'diverged'") == "3");
  fs::remove_all(dir);
}

TEST_CASE("runner: a diverged PyTorch reference run is stored 'diverged' too, with its epochs", "[runner]") {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    DTNN_SKIP("/usr/bin/python3 cannot import torch (apt-get install python3-torch)");
  const fs::path dir = dtnn::test::temp_path("diverged_torch");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "dtnn.db").string(), log = (dir / "out.log").string();
  const std::string matrix = (dir / "t.toml").string();
  // It exited 0 with NaN in its JSON (not JSON): stored 'failed: not valid JSON', not 'diverged'.
  std::ofstream(matrix) << "name = \"tdiv\"\ntimeout_s = 120\n[base]\nframework = \"pytorch\"\nmodel = \"simplemlp\"\n"
                           "use_synthetic_data = true\noptimizer = \"sgd\"\nlearning_rate = 1e12\nnum_epochs = 2\n"
                           "steps_per_epoch = 3\nthreads = 1\nevaluate_on_test = false\n";
  CHECK(dtnn_cli("run " + matrix + " --db " + db, log) == 1);
  INFO(read_text(log));
  CHECK(one(db, "SELECT status FROM runs") == "diverged");
  CHECK_THAT(one(db, "SELECT error FROM runs"),
             Contains("torch_train: diverged: the training loss (categorical_cross_entropy) is nan after epoch 1") ||
                 Contains("torch_train: diverged: the training loss (categorical_cross_entropy) is inf after epoch 1"));
  CHECK(one(db, "SELECT count(*) FROM epochs WHERE train_loss IS NULL AND epoch = 1") == "1");
  CHECK(one(db, "SELECT count(*) FROM runs WHERE samples_per_s IS NULL") == "1");
  fs::remove_all(dir);
}
