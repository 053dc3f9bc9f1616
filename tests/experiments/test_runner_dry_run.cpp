// The runner's --dry-run: each trial's command with its launcher, and the matrix keys the runner turns into
// launcher or train arguments (scaling, transport) with their conflicts refused.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "experiments/runner_helpers.h"

using Catch::Contains;
using namespace dtnn::test::runner;
namespace fs = std::filesystem;

TEST_CASE("runner: --dry-run prints each trial's command with its launcher", "[runner]") {
  Workspace ws("dry");
  std::ofstream(ws.dir / "hosts") << "localhost slots=2\n";
  const std::string mpi = ws.file("mpi.toml", std::string(R"(name = "mpi"
[launcher]
hostfile = "hosts"
args = ["--bind-to", "core"]
)") + kQuickBase + "[axes]\nranks = [1, 2]\n[[include]]\nframework = \"pytorch\"\nranks = 2\n");
  const std::string log = (ws.dir / "dry.log").string();
  REQUIRE(dtnn_cli("run " + mpi + " --dry-run --db " + ws.db(), log) == 0);
  const std::string out = read_text(log);
  CHECK_THAT(out, Contains("3 trial(s) x 1 repeat(s) = 3 run(s)"));
  CHECK_THAT(out, Contains("mpirun -np 2 --hostfile " + (ws.dir / "hosts").string() +
                           " -x DTNN_RUN_NONCE -x DTNN_LAUNCHER_VERSION --bind-to core "));
  CHECK_THAT(out, Contains("--parallel=data"));
  CHECK_THAT(out, Contains("train --dataset=mnist --num_epochs=2"));
  // PyTorch at 2 ranks: one DDP world under the same mpirun, its rendezvous passed on with -x.
  CHECK_THAT(out, Contains("-x DTNN_RUN_NONCE -x DTNN_LAUNCHER_VERSION -x MASTER_ADDR -x MASTER_PORT --bind-to core "));
  CHECK_THAT(out, Contains("experiments/reference/torch_train.py --dataset=mnist --num_epochs=2"));
  CHECK_FALSE(fs::exists(ws.db()));  // a dry run touches no database

  const std::string slurm = ws.file("slurm.toml", std::string("name = \"slurm\"\n[launcher]\nkind = \"srun\"\n"
                                                              "args = [\"--mpi=pmix\"]\n") +
                                                      kQuickBase + "[axes]\nranks = [4]\n");
  REQUIRE(dtnn_cli("run " + slurm + " --dry-run", log) == 0);
  // The matrix's --mpi replaces the runner's default; its args come last.
  CHECK_THAT(read_text(log), Contains("srun -n 4 --cpus-per-task=1 --job-name=dtnn-slurm --kill-on-bad-exit=1 --mpi=pmix "));
  CHECK_THAT(read_text(log), !Contains("--mpi=pmix --mpi=pmix"));
  // An --only that matches nothing fails the dry run as it fails a real one.
  CHECK(dtnn_cli("run " + slurm + " --dry-run --only ranks=3", log) == 1);
  CHECK_THAT(read_text(log), Contains("matches the --only filters"));
  // A --dtnn that cannot run is refused before anything runs (it made every trial a stored failure).
  for (const std::string& binary : {(ws.dir / "no_such_dtnn").string(), ws.dir.string(), mpi}) {
    CHECK(dtnn_cli("run " + mpi + " --dtnn " + binary + " --db " + ws.db(), log) == 1);
    CHECK_THAT(read_text(log), Contains("--dtnn " + binary + ": not an executable file"));
  }
  // A tag with a comma was stored as two tags, and tag=a,b selected nothing.
  CHECK(dtnn_cli("run " + mpi + " --tag=ci --tag=a,b --db " + ws.db(), log) == 1);
  CHECK_THAT(read_text(log), Contains("--tag 'a,b': a tag may not hold a comma"));
  CHECK_FALSE(fs::exists(ws.db()));

  // Strong scaling: batch_size is the global batch, passed as --global_batch_size (no --batch_size).
  const std::string strong = ws.file("strong.toml", std::string("name = \"strong\"\n") + kQuickBase +
                                                        "batch_size = 96\nscaling = \"strong\"\n"
                                                        "[axes]\nranks = [1, 2]\nnon_blocking_mpi = [false, true]\n");
  REQUIRE(dtnn_cli("run " + strong + " --dry-run", log) == 0);
  const std::string s = read_text(log);
  CHECK_THAT(s, Contains("4 trial(s)"));
  CHECK_THAT(s, Contains("--global_batch_size=96"));
  CHECK_THAT(s, Contains("--non_blocking_mpi=True"));
  CHECK_THAT(s, !Contains("--batch_size=") && !Contains("--scaling"));
  // Open MPI's transport; several --only values of one name select any of them.
  const std::string tcp = ws.file("tcp.toml", std::string("name = \"tcp\"\n") + kQuickBase +
                                                  "[axes]\nranks = [1, 2, 4]\ntransport = [\"shm\", \"tcp\"]\n");
  REQUIRE(dtnn_cli("run " + tcp + " --dry-run --only ranks=2 --only ranks=4 --only transport=tcp", log) == 0);
  const std::string t = read_text(log);
  CHECK_THAT(t, Contains("2 trial(s)"));
  CHECK_THAT(t, Contains("mpirun -np 2 --mca btl self,tcp ") && Contains("mpirun -np 4 --mca btl self,tcp "));
  CHECK_THAT(t, !Contains("self,vader") && !Contains("--transport"));
  const std::string srun = ws.file("srun.toml", std::string("name = \"srun\"\n[launcher]\nkind = \"srun\"\n") +
                                                    kQuickBase + "transport = \"tcp\"\n");
  CHECK(dtnn_cli("run " + srun + " --dry-run", log) == 1);
  CHECK_THAT(read_text(log), Contains("transport is Open MPI's"));
  const std::string both = ws.file("both.toml", std::string("name = \"both\"\n") + kQuickBase +
                                                    "scaling = \"strong\"\nglobal_batch_size = 64\n");
  CHECK(dtnn_cli("run " + both + " --dry-run", log) == 1);
  CHECK_THAT(read_text(log), Contains("do not also set global_batch_size"));
  const std::string typo = ws.file("typo.toml", std::string("name = \"typo\"\n") + kQuickBase + "scaling = \"strongest\"\n");
  CHECK(dtnn_cli("run " + typo + " --dry-run", log) == 1);
  CHECK_THAT(read_text(log), Contains("expected one of weak, strong"));
}


TEST_CASE("runner: --dry-run places nodes x ranks_per_node with srun and with an mpirun hostfile", "[runner]") {
  Workspace ws("layout");
  const std::string log = (ws.dir / "dry.log").string();
  const std::string srun = ws.file("srun.toml", std::string("name = \"lay\"\n[launcher]\nkind = \"srun\"\n") + kQuickBase +
                                                    "[axes]\nnodes = [1, 2]\nranks_per_node = [2]\n"
                                                    "[[include]]\nranks = 1\n");
  REQUIRE(dtnn_cli("run " + srun + " --dry-run", log) == 0);
  std::string out = read_text(log);
  CHECK_THAT(out, Contains("srun -n 2 --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --job-name=dtnn-lay "
                           "--kill-on-bad-exit=1 --mpi=pmix "));
  CHECK_THAT(out, Contains("srun -n 4 --nodes=2 --ntasks-per-node=2 "));  // ranks = nodes x ranks_per_node
  CHECK_THAT(out, Contains("srun -n 1 --cpus-per-task=1 "));              // 1 rank is a step too
  CHECK_THAT(out, Contains("--parallel=sequential"));
  // ranks_per_node alone names its node count too: inside a --submit job srun would otherwise take the
  // allocation's (SLURM_NNODES) and spread 4 ranks 1 per node.
  const std::string per_node = ws.file("per_node.toml", std::string("name = \"lay\"\n[launcher]\nkind = \"srun\"\n") +
                                                            kQuickBase + "ranks = 4\nranks_per_node = 2\n");
  REQUIRE(dtnn_cli("run " + per_node + " --dry-run", log) == 0);
  CHECK_THAT(read_text(log), Contains("srun -n 4 --nodes=2 --ntasks-per-node=2 "));

  std::ofstream(ws.dir / "hosts") << "# the cluster\nn1 slots=8\nn2\n\nn3 slots=8 max_slots=8\nn1\n";
  const std::string mpi2 = ws.file("mpi2.toml", std::string("name = \"lay\"\n[launcher]\nhostfile = \"hosts\"\n") +
                                                    kQuickBase + "ranks_per_node = 2\n[axes]\nnodes = [2, 3]\n"
                                                    "[[include]]\nnodes = 1\n");
  REQUIRE(dtnn_cli("run " + mpi2 + " --dry-run --db " + ws.db(), log) == 0);
  out = read_text(log);
  CHECK_THAT(out, Contains("mpirun -np 4 --hostfile ") && Contains("hosts-2x2.txt: n1 slots=2; n2 slots=2\n"));
  CHECK_THAT(out, Contains("mpirun -np 6 --hostfile ") && Contains("hosts-3x2.txt: n1 slots=2; n2 slots=2; n3 slots=2\n"));
  CHECK_THAT(out, Contains("mpirun -np 2 --hostfile ") && Contains("hosts-1x2.txt: n1 slots=2\n"));
  CHECK_FALSE(fs::exists(ws.db()));

  struct Bad {
    std::string matrix, error;
  };
  const std::vector<Bad> bad = {
      {"[launcher]\nhostfile = \"hosts\"\n[axes]\nnodes = [4]\n",
       "4 nodes need a [launcher] hostfile listing at least 4 hosts (" + (ws.dir / "hosts").string() + " lists 3)"},
      {"[axes]\nnodes = [2]\n", "2 nodes need a [launcher] hostfile listing at least 2 hosts (none is given)"},
      {"ranks = 3\n[axes]\nnodes = [2]\nranks_per_node = [2]\n", "ranks = 3 but nodes x ranks_per_node = 2 x 2 = 4"},
      {"ranks = 2\n[launcher]\nkind = \"srun\"\n[axes]\nnodes = [3]\n", "ranks = 2 cannot fill nodes = 3"},
      {"[launcher]\nkind = \"none\"\n[axes]\nranks_per_node = [2]\n", "launcher kind 'none' cannot start 2 ranks"},
      {"[launcher]\nhostfile = \"nosuch\"\n[axes]\nnodes = [2]\n", "nosuch: cannot read the file (No such file"},
  };
  for (const Bad& b : bad) {
    INFO(b.matrix);
    // [launcher] after [base] keys would put them in the launcher table: the base goes last.
    const size_t axes = b.matrix.find("[axes]");
    const std::string head = b.matrix.substr(0, axes), tail = b.matrix.substr(axes);
    const std::string base_keys = head.rfind("ranks = ", 0) == 0 ? head.substr(0, head.find('\n') + 1) : "";
    const std::string launcher = head.substr(base_keys.size());
    const std::string path = ws.file("bad.toml", "name = \"bad\"\n" + launcher + kQuickBase + base_keys + tail);
    CHECK(dtnn_cli("run " + path + " --dry-run", log) == 1);
    CHECK_THAT(read_text(log), Contains(b.error));
  }
}

TEST_CASE("runner: $DTNN_SOURCE_DIR names the tree dtnn reads its scripts and targets from", "[runner]") {
  // A binary carried to a machine where the tree lies elsewhere (the lent GPU machine): the PyTorch
  // reference and analysis/targets.toml come from there, not from the build's source path.
  Workspace ws("source_dir");
  const std::string m = ws.file("t.toml", std::string("name = \"t\"\n") + kQuickBase + "framework = \"pytorch\"\n");
  const std::string log = (ws.dir / "dry.log").string();
  const std::string tree = (ws.dir / "elsewhere").string();
  REQUIRE(dtnn_cli("run " + m + " --dry-run", log) == 0);
  CHECK_THAT(read_text(log), Contains(std::string(DTNN_SOURCE_DIR) + "/experiments/reference/torch_train.py"));
  ::setenv("DTNN_SOURCE_DIR", tree.c_str(), 1);  // inherited by the dtnn child
  const int dry = dtnn_cli("run " + m + " --dry-run", log);
  const std::string dry_out = read_text(log);
  // The default targets file too: that tree has none, and the run says which file it looked for.
  const int real = dtnn_cli("run " + m + " --db " + ws.db(), log);
  ::unsetenv("DTNN_SOURCE_DIR");
  CHECK(dry == 0);
  CHECK_THAT(dry_out, Contains(tree + "/experiments/reference/torch_train.py"));
  CHECK(real != 0);
  CHECK_THAT(read_text(log), Contains(tree + "/analysis/targets.toml"));
}

TEST_CASE("runner: --dry-run counts predicted trials once, a missing hostfile fails before any run", "[runner]") {
  Workspace ws("dry_counts");
  const std::string log = (ws.dir / "dry.log").string();
  // 1 measured trial x 3 repeats + 2 predicted ones (predicted once each, as the real run does) = 5 runs.
  const std::string m = ws.file("p.toml", std::string("name = \"p\"\nrepeats = 3\n") + kQuickBase +
                                              "[axes]\nmodel = [\"simplecnn\"]\n[[include]]\nmode = \"predict\"\n"
                                              "ranks = [2, 4]\n");
  REQUIRE(dtnn_cli("run " + m + " --dry-run --db " + ws.db(), log) == 0);
  CHECK_THAT(read_text(log), Contains("1 trial(s) x 3 repeat(s) + 2 predicted = 5 run(s)"));
  // The hostfile was checked only for trials with a layout; the others failed one by one in mpirun.
  const std::string h = ws.file("h.toml", std::string("name = \"h\"\n[launcher]\nhostfile = \"nope.txt\"\n") +
                                              kQuickBase + "[axes]\nranks = [2]\n");
  CHECK(dtnn_cli("run " + h + " --db " + ws.db(), log) == 1);
  CHECK_THAT(read_text(log), Contains("launcher 'hostfile': " + (ws.dir / "nope.txt").string() + " is not a file"));
  CHECK_FALSE(fs::exists(ws.db()));  // refused before the database was made
  // An empty hostfile, or one whose slot count mpirun rejects, was stored as every run's error (mpirun's).
  const std::string hosts = (ws.dir / "hosts.txt").string();
  const std::string listed = ws.file("l.toml", std::string("name = \"l\"\n[launcher]\nhostfile = \"hosts.txt\"\n") +
                                                   kQuickBase + "[axes]\nranks = [2]\n");
  for (const auto& [text, error] : std::vector<std::pair<std::string, std::string>>{
           {"# nothing\n\n", hosts + ": the hostfile lists no host"},
           {"n1 slots=2\nn2 slots=two\n", hosts + ":2: 'slots=two' is not slots=N with N a positive count of slots"},
           {"n1 max_slots=0\n", hosts + ":1: 'max_slots=0' is not max_slots=N"},
           // a host name is passed to mpirun (and ssh): an option in its place is refused
           {"n1\n-oProxyCommand=touch${IFS}/tmp/x slots=1\n", hosts + ":2: '-oProxyCommand=touch${IFS}/tmp/x' is not a host name"},
           {"n1;reboot\n", hosts + ":1: 'n1;reboot' is not a host name"}}) {
    std::ofstream(hosts) << text;
    CHECK(dtnn_cli("run " + listed + " --db " + ws.db(), log) == 1);
    CHECK_THAT(read_text(log), Contains(error));
    CHECK_FALSE(fs::exists(ws.db()));
  }
}
