// Threads per rank when --threads is left at 0 (engine/train/run.h default_threads): the launcher's word
// first (OMP_NUM_THREADS, then Slurm's cpus per task), else the cores the rank may run on divided among the
// ranks sharing them. Affinity is changed only inside a helper thread (sched_setaffinity(0) is per thread), so the
// test process keeps its own mask.
#include <sched.h>

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

// default_threads(ranks_sharing) on a thread bound to the first `n` CPUs this process may use.
int on_cpus(size_t n, int ranks_sharing) {
  const std::vector<int> cpus = allowed_cpus();
  int result = -1;
  std::thread t([&] {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    for (size_t i = 0; i < n && i < cpus.size(); ++i) CPU_SET(cpus[i], &mask);
    if (::sched_setaffinity(0, sizeof mask, &mask) == 0) result = dtnn::default_threads(ranks_sharing);
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

TEST_CASE("default threads: a launcher's count past what a rank runs is refused, not handed to OpenMP", "[train]") {
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", nullptr);
  {
    ScopedEnv omp("OMP_NUM_THREADS", "99999");
    CHECK_THROWS_WITH(dtnn::default_threads(1), Catch::Contains("OMP_NUM_THREADS=99999") &&
                                                    Catch::Contains("at most 1024"));
  }
  {
    ScopedEnv omp("OMP_NUM_THREADS", "99999999999999999999999");  // past long: refused, not wrapped
    CHECK_THROWS_WITH(dtnn::default_threads(1), Catch::Contains("OMP_NUM_THREADS="));
  }
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  {
    ScopedEnv big("SLURM_CPUS_PER_TASK", "99999");
    CHECK_THROWS_WITH(dtnn::default_threads(1), Catch::Contains("SLURM_CPUS_PER_TASK=99999"));
  }
  ScopedEnv most("SLURM_CPUS_PER_TASK", "1024");
  CHECK(dtnn::default_threads(1) == 1024);
}

TEST_CASE("default threads: a rank bound to one core uses one", "[train]") {
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", nullptr);
  CHECK(on_cpus(1, 1) == 1);
  CHECK(on_cpus(1, 4) == 1);  // shared with 3 other ranks: still one thread, never 0
}

TEST_CASE("default threads: ranks sharing cores split them", "[train]") {
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", nullptr);
  if (allowed_cpus().size() < 2)
    DTNN_SKIP("needs 2 CPUs this process may run on; it has " + std::to_string(allowed_cpus().size()));
  CHECK(on_cpus(2, 1) == 2);  // bound to 2 cores of its own
  CHECK(on_cpus(2, 2) == 1);  // 2 ranks on one 2-core mask (a per-socket binding, a cpuset)
  CHECK(on_cpus(2, 8) == 1);
}

TEST_CASE("default threads: an unbound rank takes its share of the machine", "[train]") {
  ScopedEnv omp("OMP_NUM_THREADS", nullptr);
  ScopedEnv slurm("SLURM_CPUS_PER_TASK", nullptr);
  const int cpus = static_cast<int>(allowed_cpus().size());  // the whole machine unless ctest was bound
  CHECK(dtnn::default_threads(1) == cpus);
  CHECK(dtnn::default_threads(2) == std::max(1, cpus / 2));
  CHECK(dtnn::default_threads(cpus + 1) == 1);  // more ranks than cores: one each
}
