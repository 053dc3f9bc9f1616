// MPI collective benchmark: MPI_Allreduce (in place) and MPI_Iallreduce + MPI_Wait of float buffers (MPI_SUM)
// from 4 B to 64 MiB in ×2 steps, the data-parallel trainer's gradient reduction in isolation. Run it under
// mpirun (`mpirun -np 2 build/suites/bench_allreduce --benchmark_format=json > a.json && dtnn ingest a.json`);
// `dtnn ingest` stores the rows in collective_benchmarks, for a latency/bandwidth model t = alpha + bytes*beta.
//
// Cases are BM_Allreduce/<bytes> and BM_Iallreduce/<bytes> (Google Benchmark appends
// "/iterations:10/manual_time"). Their time is per operation on the slowest rank (cpu_time is rank 0's CPU time
// per batch of ops_per_batch operations, MPI's busy polling included: not a per-operation figure). Counters:
// bytes, ranks, ops_per_batch, bytes_per_second (algorithm bandwidth, bytes / time) and bus_bytes_per_second
// (bus bandwidth as nccl-tests defines it for allreduce: algorithm bandwidth × 2(p-1)/p, the share of the
// buffer a ring allreduce sends and receives per rank, so that it compares with a link's bandwidth whatever p
// is; the factor is 1 for p = 2). The JSON context says dtnn_suite = bench_allreduce, ranks, nodes, the MPI
// version and library, and the transport requested (OMPI_MCA_btl / OMPI_MCA_pml as mpirun --mca sets them;
// "default" without them: on one node, Open MPI 4.1's ob1 over the vader shared-memory btl).
//
// Own flag, taken out before Google Benchmark sees the rest: --case_time=SECONDS (0.2): the timed part of each
// case; the calibration before it adds at most about as much again.
//
// Every rank must call every collective the same number of times, or the job hangs in a collective that the
// other rank never joins. Google Benchmark's automatic iteration count is decided per process from that
// process's own clock, so two ranks may choose different counts and deadlock; random interleaving
// (--benchmark_enable_random_interleaving) would order the cases differently per rank. Therefore:
//   - every case has a fixed Google Benchmark iteration count, kBatches; one iteration is one batch of K
//     operations between a barrier and an allreduce (MAX) of the batch's elapsed time;
//   - K is calibrated, and adjusted between batches, from those MAX times only, which are bit-identical on
//     every rank (the result of one allreduce), so every rank takes the same decisions (checked per case);
//   - random interleaving is refused; repetitions and filters are command-line flags, the same on every rank.
// Only rank 0 reports; the other ranks run the same cases with a reporter that prints nothing and with
// --benchmark_out= forced empty (else they would open, and truncate, rank 0's output file).
#include <mpi.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int kBatches = 10;              // Google Benchmark iterations per case (fixed: see above)
constexpr int64_t kMaxOpsPerBatch = int64_t{1} << 30;
double g_case_time = 0.2;                 // --case_time
int g_rank = 0, g_ranks = 1;

enum class Op { allreduce, iallreduce };

// One reduction of the whole buffer. The buffer holds zeros: in-place sums stay zero, so repeated reductions
// never overflow to infinity or produce denormals (either could change the arithmetic's speed).
void one_op(Op op, float* buf, int n) {
  if (op == Op::allreduce) {
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
}

// Seconds that k back-to-back operations took on the slowest rank. All ranks start after a barrier; the max
// is what a data-parallel step waits for. The result of an allreduce: the same double on every rank.
double timed_batch(Op op, float* buf, int n, int64_t k) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int64_t i = 0; i < k; ++i) one_op(op, buf, n);
  double elapsed = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return elapsed;
}

// The next batch's operation count: grown (at most 10× a step) toward case_time / kBatches when a batch took
// less than half of it, else kept. Never shrunk: a batch that ran long because a rank was descheduled (the
// 2 cores here are shared) says nothing about the operation. It reads only timed_batch's agreed value, so
// every rank computes the same count.
int64_t next_ops(int64_t k, double t) {
  const double target = g_case_time / kBatches;
  if (t >= target / 2 || k >= kMaxOpsPerBatch) return k;
  const double want = t > 0 ? static_cast<double>(k) * target * 1.2 / t : static_cast<double>(k) * 10;
  return std::clamp(static_cast<int64_t>(std::ceil(want)), k + 1, std::min(k * 10, kMaxOpsPerBatch));
}

// Operations per batch so that a batch lasts about case_time / kBatches on the slowest rank, found once per
// case by growing from 1 (repetitions start from what the previous one ended with). The timed batches go on
// adjusting it with next_ops, so a calibration batch that a preemption made slow costs little. The
// calibration batches also warm up: pages touched, connections made, the collective's algorithm chosen.
std::map<std::pair<Op, int>, int64_t> g_ops_per_batch;

int64_t calibrated_ops(Op op, float* buf, int n) {
  const auto key = std::make_pair(op, n);
  if (auto it = g_ops_per_batch.find(key); it != g_ops_per_batch.end()) return it->second;
  int64_t k = 1;
  for (int64_t next;; k = next) {
    next = next_ops(k, timed_batch(op, buf, n, k));
    if (next == k) break;
  }
  return g_ops_per_batch[key] = k;
}

// Aborts the job when the ranks ran different operation counts (none can: see above; a change that broke
// it would otherwise hang, or worse, time mismatched collectives).
void check_same_on_all_ranks(int64_t ops) {
  int64_t range[2] = {-ops, ops};  // max of -ops and of ops: -min and max
  MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (-range[0] == range[1]) return;
  std::fprintf(stderr, "bench_allreduce: ranks ran different operation counts (%lld..%lld)\n",
               static_cast<long long>(-range[0]), static_cast<long long>(range[1]));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

void BM_Collective(benchmark::State& state, Op op) {
  const int64_t bytes = state.range(0);
  const int n = static_cast<int>(bytes / static_cast<int64_t>(sizeof(float)));
  std::vector<float> buf(static_cast<size_t>(n), 0.0f);
  one_op(op, buf.data(), n);  // the first reduction of a buffer pays for setup; never timed
  int64_t k = calibrated_ops(op, buf.data(), n);
  double sum_per_op = 0;  // Google Benchmark's time is the mean over batches of t / k: so are the counters
  int64_t ops = 0;
  for (auto _ : state) {
    const double t = timed_batch(op, buf.data(), n, k);
    sum_per_op += t / static_cast<double>(k);
    ops += k;
    state.SetIterationTime(t / static_cast<double>(k));  // reported per operation, not per batch
    k = next_ops(k, t);
  }
  g_ops_per_batch[std::make_pair(op, n)] = k;
  check_same_on_all_ranks(ops);
  const double batches = static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  const double per_op = sum_per_op / batches;
  const double algbw = per_op > 0 ? static_cast<double>(bytes) / per_op : 0.0;
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["ranks"] = g_ranks;
  state.counters["ops_per_batch"] = static_cast<double>(ops) / batches;  // a mean: batches may grow
  state.counters["bytes_per_second"] = algbw;
  state.counters["bus_bytes_per_second"] = algbw * 2.0 * (g_ranks - 1) / g_ranks;
}

// Rank != 0: runs everything, prints nothing. ReportContext must return true or no case runs at all.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

std::string transport() {
  std::string t;
  if (const char* btl = std::getenv("OMPI_MCA_btl")) t = std::string("btl=") + btl;
  if (const char* pml = std::getenv("OMPI_MCA_pml")) t += (t.empty() ? "" : ";") + std::string("pml=") + pml;
  return t.empty() ? "default" : t;
}

int node_count() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0, leaders = 0;
  MPI_Comm_rank(node, &node_rank);
  const int leader = node_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_free(&node);
  return leaders;
}

void add_context() {
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0, version = 0, subversion = 0;
  MPI_Get_library_version(library, &length);
  MPI_Get_version(&version, &subversion);
  std::string lib(library, static_cast<size_t>(length));
  lib = lib.substr(0, lib.find_first_of("\r\n"));  // Open MPI's first line: "Open MPI v4.1.4, package: ..."
  while (!lib.empty() && (lib.back() == ' ' || lib.back() == '\0')) lib.pop_back();
  benchmark::AddCustomContext("dtnn_suite", "bench_allreduce");
  benchmark::AddCustomContext("ranks", std::to_string(g_ranks));
  benchmark::AddCustomContext("nodes", std::to_string(node_count()));
  benchmark::AddCustomContext("mpi_version", std::to_string(version) + "." + std::to_string(subversion));
  benchmark::AddCustomContext("mpi_library", lib);
  benchmark::AddCustomContext("mpi_transport", transport());
  benchmark::AddCustomContext("bus_bandwidth_factor", "2(p-1)/p");
}

// Takes --case_time out of argv; refuses random interleaving. Every rank sees the same argv, so every rank
// reaches the same verdict; only rank 0 says it. Returns false on a bad flag.
bool own_flags(int& argc, char** argv) {
  int kept = 1;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--case_time=", 0) == 0) {
      char* end = nullptr;
      g_case_time = std::strtod(a.c_str() + 12, &end);
      if (end == a.c_str() + 12 || *end != '\0' || !(g_case_time > 0) || !std::isfinite(g_case_time)) {
        if (g_rank == 0)
          std::cerr << "bench_allreduce: --case_time wants positive seconds, not '" << a.substr(12) << "'\n";
        ok = false;
      }
      continue;
    }
    if (a.rfind("--benchmark_enable_random_interleaving", 0) == 0 &&
        a != "--benchmark_enable_random_interleaving=false") {
      if (g_rank == 0) std::cerr << "bench_allreduce: random interleaving orders cases differently per rank (a hang)\n";
      ok = false;
      continue;
    }
    // Google Benchmark's warm-up counts the manual time of one operation per iteration, and an iteration here
    // is a batch of K operations: 0.05 s of "warm-up" ran for minutes. The first batch is the warm-up here.
    if (a.rfind("--benchmark_min_warmup_time", 0) == 0 && a != "--benchmark_min_warmup_time=0") {
      if (g_rank == 0) std::cerr << "bench_allreduce: --benchmark_min_warmup_time does not apply (manual timing per batch)\n";
      ok = false;
      continue;
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
  if (!own_flags(argc, argv)) {
    MPI_Finalize();
    return 1;
  }
  std::vector<char*> args(argv, argv + argc);
  std::string no_out = "--benchmark_out=";  // last wins over a user's --benchmark_out and $BENCHMARK_OUT
  if (g_rank != 0) args.push_back(no_out.data());
  // The same over $BENCHMARK_ENABLE_RANDOM_INTERLEAVING and $BENCHMARK_MIN_WARMUP_TIME (refused above as flags):
  // from the environment they reached every rank, ordered the cases per rank and aborted in MPI_ERR_TRUNCATE.
  std::string no_interleaving = "--benchmark_enable_random_interleaving=false";
  std::string no_warmup = "--benchmark_min_warmup_time=0";
  args.push_back(no_interleaving.data());
  args.push_back(no_warmup.data());
  int nargs = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&nargs, args.data());
  if (nargs > 1) {
    if (g_rank == 0) std::cerr << "bench_allreduce: unrecognized argument '" << args[1] << "'\n";
    MPI_Finalize();
    return 1;
  }
  for (const auto& [name, op] : {std::make_pair("BM_Allreduce", Op::allreduce),
                                 std::make_pair("BM_Iallreduce", Op::iallreduce)})
    benchmark::RegisterBenchmark(name, BM_Collective, op)
        ->RangeMultiplier(2)
        ->Range(4, int64_t{64} << 20)
        ->Iterations(kBatches)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  add_context();
  if (g_rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
