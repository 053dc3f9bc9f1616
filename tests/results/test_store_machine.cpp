// The machine's identity (core/machine.h, migration 10): parsed from /proc/cpuinfo texts of other machines,
// part of what makes two environments different, kept as "not recorded" for rows of older databases, and
// what `dtnn compare` refuses to mix unless asked.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "analysis/compare.h"
#include "core/error.h"
#include "core/machine.h"
#include "results/store.h"
#include "store_test_helpers.h"

using Catch::Matchers::Contains;
using dtnn::test::fresh_db;
using dtnn::test::one;

namespace {

// Two sockets of two cores with two threads each, abridged from a real dual-socket Xeon's /proc/cpuinfo.
std::string xeon_cpuinfo() {
  std::string text;
  int cpu = 0;
  for (int socket = 0; socket < 2; ++socket)
    for (int core = 0; core < 2; ++core)
      for (int thread = 0; thread < 2; ++thread, ++cpu)
        text += "processor\t: " + std::to_string(cpu) +
                "\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
                "model name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\n"
                "physical id\t: " + std::to_string(socket) + "\ncore id\t\t: " + std::to_string(core) +
                "\nflags\t\t: fpu sse4_2 avx fma avx2 avx512f avx512bw avx512vl avx512_bf16 amx_bf16 amx_tile "
                "amx_int8 avx512_vnni hypervisor\n\n";
  return text;
}

}  // namespace

TEST_CASE("machine: /proc/cpuinfo gives vendor, family/model/stepping, ISA, cores and sockets", "[store][machine]") {
  const dtnn::MachineIdentity m = dtnn::parse_cpuinfo(xeon_cpuinfo());
  CHECK(m.vendor == "GenuineIntel");
  CHECK(m.family == 6);
  CHECK(m.model == 143);
  CHECK(m.stepping == 8);
  CHECK(m.model_name == "Intel(R) Xeon(R) Platinum 8480+");
  // Recorded extensions in the fixed order, whatever order cpuinfo lists them in; others (fpu) left out.
  CHECK(m.isa == "sse4_2 avx fma avx2 avx512f avx512bw avx512vl avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8");
  CHECK(m.physical_cores == 4);
  CHECK(m.sockets == 2);
  const std::string zen =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
      "stepping\t: 1\nflags\t\t: sse4_2 avx avx2 fma\n\n";
  const dtnn::MachineIdentity z = dtnn::parse_cpuinfo(zen);
  CHECK(z.isa == "sse4_2 avx fma avx2");
  CHECK(z.physical_cores == 0);  // cpuinfo without core ids does not say
  CHECK(z.key() != m.key());
  dtnn::MachineIdentity zen4 = z;  // same name, another generation: another machine
  zen4.model = 17;
  CHECK(zen4.key() != z.key());
  // Arm: the implementer and part name the core (here a Neoverse N1, implementer 0x41 part 0xd0c, r3p1).
  const dtnn::MachineIdentity arm = dtnn::parse_cpuinfo(
      "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes crc32 atomics\nCPU implementer\t: 0x41\n"
      "CPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n");
  CHECK(arm.vendor == "arm-implementer-0x41");
  CHECK(arm.family == 8);
  CHECK(arm.model == 0xd0c);
  CHECK(arm.stepping == 3 * 16 + 1);
  CHECK(arm.isa == "asimd");
  CHECK(arm.known());
  dtnn::MachineIdentity graviton3 = arm;
  graviton3.model = 0xd40;
  CHECK(graviton3.key() != arm.key());
  CHECK(dtnn::MachineIdentity().key().empty());  // nothing read: no key, as in the store
  // This machine: something was read.
  const dtnn::MachineIdentity& here = dtnn::machine_identity();
  CHECK(here.logical_cpus > 0);
  CHECK_FALSE(here.kernel.empty());
  CHECK_FALSE(here.hypervisor.empty());
}

TEST_CASE("machine: environments differing only in the machine are two rows", "[store][machine]") {
  dtnn::ResultStore store = dtnn::ResultStore::open(fresh_db("machine_envs"));
  dtnn::StoredEnvironment a;
  a.host = "ci";
  a.machine = dtnn::parse_cpuinfo(xeon_cpuinfo());
  dtnn::StoredEnvironment b = a;
  b.machine.model = 207;
  const int64_t ia = store.add_environment(a), ib = store.add_environment(b);
  CHECK(ia != ib);
  CHECK(store.add_environment(a) == ia);
  dtnn::StoredEnvironment c = a;
  c.machine.kernel = "Linux 6.1";  // a kernel update: another row, same machine key
  CHECK(store.add_environment(c) != ia);
  CHECK(one(store, "SELECT count(DISTINCT machine_key) FROM environments") == "2");
  CHECK(one(store, "SELECT cpu_vendor || ' ' || cpu_family || '/' || cpu_model_number || '/' || cpu_stepping || ' ' || "
                   "physical_cores || ' ' || sockets FROM environments WHERE id = " + std::to_string(ia)) ==
        "GenuineIntel 6/143/8 4 2");
  dtnn::StoredEnvironment unknown;  // nothing described: not recorded
  CHECK(one(store, "SELECT machine_key FROM environments WHERE id = " +
                       std::to_string(store.add_environment(unknown))) == "");
}

TEST_CASE("machine: a version-9 database migrates, its environments not recorded", "[store][machine]") {
  const std::string path = fresh_db("machine_v9");
  {
    dtnn::ResultStore v9 = dtnn::ResultStore::open_at_version(path, 9);
    REQUIRE(v9.version() == 9);
    v9.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
            "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
            " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
            " 'c0ffee',0,'{}'), ('h2','c',2,'none','g','b','o','m','c','R','0','c0ffee',1,'{}');"
            "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
            " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
            " log_path, runner_pid, runner_host, samples_per_s) VALUES"
            " (1, 2, 'k1', 'c', 'l', 0, 'dtnn', 'simplecnn', 'mnist', 'auto', 1, 1, 'cpu', 64, 1, 'sgd', '{}', 'ok',"
            " 'x', 'y', 1, 'h', 1900.0);"
            "INSERT INTO conv_benchmarks (environment_id, source, file, model, problem, algorithm, direction, device,"
            " threads, tf32, median_ms) VALUES (2, 'bench_conv', 'f.json', '', 'p', 'a', 'fwd', 'cpu', 1, 0, 1.5);");
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM environments WHERE machine_key = ''") == "2");
  CHECK(one(latest, "SELECT git_commit || '+' || git_dirty FROM environments WHERE id = 2") == "c0ffee+1");
  CHECK(one(latest, "SELECT host FROM runs r JOIN environments e ON e.id = r.environment_id") == "h2");
  CHECK(one(latest, "SELECT git_commit FROM v_throughput") == "c0ffee+dirty");
  CHECK(one(latest, "SELECT environment_id FROM conv_benchmarks") == "2");
  CHECK(latest.query("PRAGMA foreign_key_check").rows.empty());
}

TEST_CASE("machine: compare refuses two machines unless asked, and says so", "[store][machine][compare]") {
  dtnn::ResultStore store = dtnn::ResultStore::open(fresh_db("machine_compare"));
  const int64_t matrix = store.add_matrix("m", "m.toml", "h", "name = \"m\"\n");
  dtnn::StoredEnvironment zen3;
  zen3.host = "vm";
  zen3.machine = dtnn::parse_cpuinfo("vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
                                     "model name\t: AMD EPYC\nstepping\t: 1\nflags\t\t: avx2\n\n");
  dtnn::StoredEnvironment zen4 = zen3;
  zen4.machine.model = 17;
  zen4.machine.isa = "avx2 avx512f";
  const int64_t envs[2] = {store.add_environment(zen3), store.add_environment(zen4)};
  for (int side = 0; side < 2; ++side)
    for (int r = 0; r < 4; ++r) {
      dtnn::RunStart s;
      s.matrix_id = matrix;
      s.environment_id = envs[side];
      s.trial_key = s.config_key = s.label = "t";
      s.params = {{"model", "simplemlp"}};
      s.command = "dtnn train";
      s.log_path = "x.log";
      const int64_t id = store.begin_run(s);
      store.exec("UPDATE runs SET status = 'ok' WHERE id = " + std::to_string(id));
      for (int e = 1; e <= 2; ++e)
        store.exec("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) VALUES (" +
                   std::to_string(id) + ", " + std::to_string(e) + ", 1000, 1.0, " +
                   std::to_string(1000 * (side + 1) + r + e) + ", '{}')");
    }
  dtnn::CompareOptions o;
  o.baseline = "runs=1-4";
  o.candidate = "runs=5-8";
  CHECK_THROWS_WITH(dtnn::compare_runs(store, o), Contains("ran on 2 different machines") &&
                                                      Contains("AuthenticAMD 25/17/1 'AMD EPYC' isa=avx2 avx512f"));
  o.cross_machine = true;
  const dtnn::Comparison c = dtnn::compare_runs(store, o);
  CHECK(c.machines.size() == 2);
  CHECK(c.trials.at(0).verdict == "improvement");
  std::ostringstream out;
  dtnn::print_comparison(out, c, o);
  CHECK_THAT(out.str(), Contains("warning: compared across 2 machines"));
  // Runs stored without an identity (older databases) are compared, with a note.
  store.exec("UPDATE environments SET machine_key = '', host = host || id");  // UNIQUE: keep the rows apart
  o.cross_machine = false;
  const dtnn::Comparison legacy = dtnn::compare_runs(store, o);
  CHECK(legacy.unrecorded_machine_runs == 8);
}
