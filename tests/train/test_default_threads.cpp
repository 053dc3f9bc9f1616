// Threads per rank when --threads is left at 0 (engine/train/run.h default_threads): the launcher's word
// first (OMP_NUM_THREADS, then Slurm's cpus per task), else the cores the rank was bound to, else its share of
// the machine. Affinity is changed only inside a helper thread (sched_setaffinity(0) is per thread), so the
// test process keeps its own mask.
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "skip.h"
#include "train/run.h"

namespace {

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::vector<int> allowed_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(::sched_getaffinity(0, sizeof mask, &mask) == 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  return cpus;
}

// default_threads(ranks_on_node) on a thread bound to the first `n` CPUs this process may use.
int on_cpus(size_t n, int ranks_on_node) {
  const std::vector<int> cpus = allowed_cpus();
  int result = -1;
  std::thread t([&] {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    for (size_t i = 0; i < n && i < cpus.size(); ++i) CPU_SET(cpus[i], &mask);
    if (::sched_setaffinity(0, sizeof mask, &mask) == 0) result = dtnn::default_threads(ranks_on_node);
  });
  t.join();
  return result;
}

}  // namespace

TEST_CASE("default threads: the launcher's count comes first", "[train]") {
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", "5");
  {
    ScopedEnv omp("OMP_NUM_THREADS", "3");
    CHECK(dtnn::default_threads(1) == 3);
    CHECK(dtnn::default_threads(8) == 3);
  }
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  CHECK(dtnn::default_threads(2) == 5);  // srun -c 5
  ScopedEnv omp_bad("OMP_NUM_THREADS", "0");  // not a count: ignored
  CHECK(dtnn::default_threads(2) == 5);
}

TEST_CASE("default threads: a rank bound to one core uses one", "[train]") {
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", nullptr);
  CHECK(on_cpus(1, 4) == 1);  // one core, whatever the node's rank count
  CHECK(on_cpus(1, 1) == 1);
}

TEST_CASE("default threads: a rank bound to 2 cores uses 2", "[train]") {
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", nullptr);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 3 || allowed_cpus().size() < 2)
    DTNN_SKIP("a 2-core binding fewer than the machine's needs 3 online CPUs; this machine has " +
              std::to_string(online));
  CHECK(on_cpus(2, 1) == 2);
  CHECK(on_cpus(2, 8) == 2);
}

TEST_CASE("default threads: an unbound rank takes its share of the machine", "[train]") {
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", nullptr);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (static_cast<long>(allowed_cpus().size()) < online)
    DTNN_SKIP("this test process is itself bound to " + std::to_string(allowed_cpus().size()) + " of " +
              std::to_string(online) + " CPUs");
  CHECK(dtnn::default_threads(1) == online);
  CHECK(dtnn::default_threads(2) == std::max(1L, online / 2));
  CHECK(dtnn::default_threads(static_cast<int>(online) + 1) == 1);  // more ranks than cores: one each
}
