// step_replay: one training step of dtnn, replayed from its step profile on every rank of an MPI job, so that
// SimGrid's SMPI simulator can say how the step scales on a platform this machine is not (an
// independent check of the analytic model in analysis/perfmodel/).
//
//   step_replay PROFILE.json [--steps N] [--warmup K] [--json OUT] [--mode blocking|non_blocking]
//                            [--nbc binomial|mpi] [--global-batch B] [--check]
//
// What a step is: analysis/perfmodel/STEP_PROFILE.md. Compute phases are busy time of the profile's length:
// under SimGrid smpi_execute_benched(seconds), which runs seconds x the host's own speed in flops, so a
// simulated second of compute is a profile second whatever speed the platform gives its hosts; under a real
// MPI a spin on the steady clock (this proxy's own run measures the same thing, within the spin's accuracy).
// Communication is real MPI in the trainer's order (engine/parallel/gradient_reducer.cpp): blocking, one
// MPI_Allreduce(MPI_IN_PLACE) of total_floats after backward (under SimGrid from a shared send buffer: run()
// says why); non_blocking, each bucket started after the
// backward of its ready_after layer, the oldest outstanding one tested after every layer, then each waited for
// and its floats updated in launch order. One rank reduces nothing, as the trainer.
//
// --nbc: how a bucket's non-blocking sum is made. `binomial` (default under SimGrid) replays Open MPI 4.1
// libnbc's in-place schedule from point-to-point messages, progressed only inside the proxy's MPI calls
// (nbc_binomial.h says why); `mpi` (default under a real MPI) calls the library's MPI_Iallreduce. --check (real
// MPI only) fills the gradients with ones before each step and checks every bucket sums to the rank count.
//
// Times per rank and step, defined as the trainer's RankTimes: step (start to end of the last update), compute
// (phases less the time inside MPI calls made during backward), comm (time inside MPI calls), exposed (comm
// after the rank's own backward: the final waits, or the whole blocking allreduce). Reported: per step the
// maximum step over ranks and the median rank's compute/comm/exposed, then the median over the steps after the
// warmup; a line of text on rank 0 and, with --json, the same as JSON ("dtnn.step_replay/1").
#include <climits>
#include <mpi.h>
#ifdef DTNN_STEP_REPLAY_SMPI
#include <smpi/smpi.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nbc_binomial.h"
#include "profile.h"

namespace {

using namespace step_replay;

#ifdef DTNN_STEP_REPLAY_SMPI
constexpr bool kSimulated = true;
double now_s() { return MPI_Wtime(); }  // the simulated clock (std::chrono would read the host's)
void busy(double seconds) {
  if (seconds > 0) smpi_execute_benched(seconds);
}
// One allocation for every rank (SimGrid folds same-site shared allocations): 256 ranks fit in memory.
float* alloc_floats(size_t n) { return static_cast<float*>(SMPI_SHARED_MALLOC(std::max<size_t>(n, 1) * sizeof(float))); }
void free_floats(float* p) { SMPI_SHARED_FREE(p); }
// The blocking sum's operation: a commutative one that does nothing. SimGrid applies an MPI_SUM for real on the
// host without simulating its time (so it changes no simulated time), and the shared buffers' sums mean nothing:
// doing it anyway made vgg16's 553 MB allreduce on 64 simulated ranks take over 10 minutes of this machine.
void no_sum(void*, void*, int*, MPI_Datatype*) {}
MPI_Op make_sum_op() {
  MPI_Op op = MPI_OP_NULL;
  MPI_Op_create(&no_sum, 1, &op);
  return op;
}
#else
constexpr bool kSimulated = false;
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
void busy(double seconds) {  // a spin, not a sleep: the core stays busy as the trainer's would
  if (seconds <= 0) return;
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < end) {
  }
}
float* alloc_floats(size_t n) { return new float[std::max<size_t>(n, 1)](); }
void free_floats(float* p) { delete[] p; }
MPI_Op make_sum_op() { return MPI_SUM; }
#endif

struct FloatBuffer {
  explicit FloatBuffer(size_t n) : data(alloc_floats(n)) {}
  ~FloatBuffer() { free_floats(data); }
  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;
  float* data;
};

struct Options {
  std::string profile, json_out, mode, nbc;
  int steps = 20, warmup = 3;
  int64_t global_batch = 0;
  bool check = false;
};

const char* kUsage =
    "usage: step_replay PROFILE.json [--steps N] [--warmup K] [--json OUT] [--mode blocking|non_blocking]\n"
    "                   [--nbc binomial|mpi] [--global-batch B] [--check]\n";

Options parse_args(int argc, char** argv) {
  Options o;
  o.nbc = kSimulated ? "binomial" : "mpi";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    auto integer = [&](int64_t lo, int64_t hi) {
      const std::string v = value();
      size_t used = 0;
      int64_t n = 0;
      try {
        n = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || n < lo || n > hi)
        throw std::runtime_error(a + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                                 ", got '" + v + "'");
      return n;
    };
    // (Bounded: a count past INT_MAX was cut to its low bits, --steps 4294967297 ran one step.)
    if (a == "--steps") o.steps = static_cast<int>(integer(1, INT_MAX));
    else if (a == "--warmup") o.warmup = static_cast<int>(integer(0, INT_MAX));
    else if (a == "--json") o.json_out = value();
    else if (a == "--mode") o.mode = value();
    else if (a == "--nbc") o.nbc = value();
    else if (a == "--global-batch") o.global_batch = integer(1, INT64_MAX);
    else if (a == "--check") o.check = true;
    else if (a == "-h" || a == "--help") throw std::runtime_error("");
    else if (!a.empty() && a[0] == '-') throw std::runtime_error("unknown option " + a);
    else if (o.profile.empty()) o.profile = a;
    else throw std::runtime_error("one profile only (got " + o.profile + " and " + a + ")");
  }
  if (o.profile.empty()) throw std::runtime_error("no profile given");
  if (o.nbc != "binomial" && o.nbc != "mpi") throw std::runtime_error("--nbc must be binomial or mpi");
  if (o.check && kSimulated) throw std::runtime_error("--check needs a real MPI (SimGrid's buffers are shared by all ranks)");
  return o;
}

// A bucket's non-blocking sum, behind the three calls the trainer makes (start, test of the oldest, wait).
class Sums {
 public:
  virtual ~Sums() = default;
  virtual void start(size_t b) = 0;
  virtual bool test(size_t b) = 0;
  virtual void wait(size_t b) = 0;
};

// The MPI library's own MPI_Iallreduce, in place as the trainer calls it. Except under SimGrid 3.32, whose
// MPI_Iallreduce(MPI_IN_PLACE) copies the buffer into a temporary that it frees on return while its sends still
// read it (a use after free: a segfault once the temporary was a fresh mmap, ~10 MB): there a separate send
// buffer (`tmp`) takes its place, which changes nothing simulated (SimGrid copies the data either way).
class MpiSums final : public Sums {
 public:
  MpiSums(const Profile& p, float* slab, float* tmp) : p_(p), slab_(slab), tmp_(tmp), requests_(p.buckets.size(), MPI_REQUEST_NULL) {}
  void start(size_t b) override {
    const ProfileBucket& k = p_.buckets[b];
    const void* send = kSimulated ? static_cast<const void*>(tmp_ + k.begin) : MPI_IN_PLACE;
    MPI_Iallreduce(send, slab_ + k.begin, static_cast<int>(k.floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &requests_[b]);
  }
  bool test(size_t b) override {
    int flag = 0;
    MPI_Test(&requests_[b], &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
  void wait(size_t b) override { MPI_Wait(&requests_[b], MPI_STATUS_IGNORE); }

 private:
  const Profile& p_;
  float* slab_;
  float* tmp_;
  std::vector<MPI_Request> requests_;
};

class BinomialSums final : public Sums {  // libnbc's in-place schedule, progressed as Open MPI 4.1 does
 public:
  BinomialSums(const Profile& p, float* slab, float* tmp, int rank, int ranks)
      : p_(p), slab_(slab), tmp_(tmp), active_(p.buckets.size(), false) {
    for (size_t b = 0; b < p.buckets.size(); ++b) sums_.emplace_back(rank, ranks, MPI_COMM_WORLD);
  }
  void start(size_t b) override {
    const ProfileBucket& k = p_.buckets[b];
    sums_[b].start(slab_ + k.begin, tmp_ + k.begin, static_cast<int>(k.floats), 100 + static_cast<int>(b));
    active_[b] = !sums_[b].done();
  }
  bool test(size_t b) override {  // opal_progress: every active schedule moves on by one round at most
    progress_all();
    return sums_[b].done();
  }
  void wait(size_t b) override {  // MPI_Wait spins the progress engine; block until some message completes
    while (!sums_[b].done()) {
      if (progress_all()) continue;
      std::vector<MPI_Request> pending;
      std::vector<MPI_Request*> owner;
      for (size_t k = 0; k < sums_.size(); ++k)
        if (active_[k])
          for (MPI_Request& r : sums_[k].pending())
            if (r != MPI_REQUEST_NULL) {
              pending.push_back(r);
              owner.push_back(&r);
            }
      if (pending.empty()) continue;
      int index = MPI_UNDEFINED;
      MPI_Waitany(static_cast<int>(pending.size()), pending.data(), &index, MPI_STATUS_IGNORE);
      if (index != MPI_UNDEFINED) *owner[static_cast<size_t>(index)] = MPI_REQUEST_NULL;
    }
  }

 private:
  // Returns whether a schedule moved to another round (so a waiter should look again before blocking).
  bool progress_all() {
    bool moved = false;
    for (size_t k = 0; k < sums_.size(); ++k) {
      if (!active_[k]) continue;
      const size_t before = sums_[k].round();
      if (sums_[k].progress()) active_[k] = false;
      moved = moved || !active_[k] || sums_[k].round() != before;
    }
    return moved;
  }

  const Profile& p_;
  float* slab_;
  float* tmp_;
  std::vector<BinomialAllreduce> sums_;
  std::vector<bool> active_;
};

struct StepTimes {
  double step = 0, compute = 0, comm = 0, exposed = 0;
};

// One step of one rank, in the trainer's order (GradientReducer::begin_step / after_layer / finish).
// send: the blocking allreduce's send buffer, nullptr for MPI_IN_PLACE (as the trainer; see run()).
StepTimes replay_step(const Profile& p, Sums* sums, float* slab, const float* send, MPI_Op sum, bool reduce) {
  const bool overlapped = reduce && p.mode == "non_blocking";
  StepTimes t;
  const double t0 = now_s();
  busy(p.other_s);
  for (const ProfileLayer& l : p.layers) busy(l.forward_s);
  busy(p.loss_s);
  double comm_in_step = 0.0;
  size_t next_start = 0, next_test = 0;
  const size_t nb = p.buckets.size(), last = p.layers.size() - 1;
  // Model::backward runs layers top..1 with the hook after each: the Input (0) has no backward (profile.h
  // refuses a time there), and a last Softmax is fused into the (default) categorical cross-entropy loss, so top
  // is the layer below it. A backward time the profile gives that Softmax anyway is still spent, without a hook
  // call.
  const size_t top = last >= 2 && p.layers[last].type == "Softmax" ? last - 1 : last;
  if (top != last) busy(p.layers[last].backward_s);
  for (size_t i = top; i >= 1; --i) {
    busy(p.layers[i].backward_s);
    if (!overlapped || next_test == nb) continue;
    const double c0 = now_s();
    while (next_start < nb && i <= p.buckets[next_start].ready_after) sums->start(next_start++);
    while (next_test < next_start && sums->test(next_test)) ++next_test;
    comm_in_step += now_s() - c0;
  }
  const double backward_end = now_s();
  t.compute = backward_end - t0 - comm_in_step;
  double exposed = 0.0, update = 0.0;
  if (!overlapped) {
    if (reduce && p.total_floats > 0) {  // (SimGrid 3.32's algorithms divide by the count: SIGFPE on 0)
      MPI_Allreduce(send ? static_cast<const void*>(send) : MPI_IN_PLACE, slab, static_cast<int>(p.total_floats),
                    MPI_FLOAT, sum, MPI_COMM_WORLD);
      exposed = now_s() - backward_end;
    }
    const double u = now_s();
    busy(p.update_s_per_float * static_cast<double>(p.total_floats));
    update = now_s() - u;
  } else {
    while (next_start < nb) sums->start(next_start++);
    exposed = now_s() - backward_end;
    for (size_t b = 0; b < nb; ++b) {
      const double w = now_s();
      sums->wait(b);
      const double w1 = now_s();
      exposed += w1 - w;
      busy(p.update_s_per_float * static_cast<double>(p.buckets[b].floats));
      update += now_s() - w1;
    }
  }
  t.exposed = exposed;
  t.comm = comm_in_step + exposed;
  t.compute += update;
  t.step = now_s() - t0;
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --check: every bucket's first and last float must hold the rank count after the step (ones summed).
bool sums_are_right(const Profile& p, const float* slab, int ranks) {
  auto ok = [&](int64_t i) { return slab[i] == static_cast<float>(ranks); };
  if (p.mode == "blocking" || p.buckets.empty()) return p.total_floats == 0 || (ok(0) && ok(p.total_floats - 1));
  for (const ProfileBucket& b : p.buckets)
    if (b.floats > 0 && !(ok(b.begin) && ok(b.begin + b.floats - 1))) return false;
  return true;
}

struct Summary {
  double step = 0, compute = 0, compute_max = 0, comm = 0, exposed = 0, exposed_min = 0, exposed_max = 0;
  std::vector<double> steps;  // per measured step, the slowest rank's step time
};

// all: [rank][step] flattened as 4 doubles per step (step, compute, comm, exposed).
Summary summarise(const std::vector<double>& all, int ranks, int total_steps, int warmup) {
  Summary s;
  std::vector<double> step, compute, compute_max, comm, exposed, exposed_min, exposed_max;
  for (int k = warmup; k < total_steps; ++k) {
    std::vector<double> f[4];
    for (int r = 0; r < ranks; ++r)
      for (int j = 0; j < 4; ++j) f[j].push_back(all[(static_cast<size_t>(r) * total_steps + k) * 4 + j]);
    step.push_back(*std::max_element(f[0].begin(), f[0].end()));
    compute.push_back(median(f[1]));
    compute_max.push_back(*std::max_element(f[1].begin(), f[1].end()));
    comm.push_back(median(f[2]));
    exposed.push_back(median(f[3]));
    exposed_min.push_back(*std::min_element(f[3].begin(), f[3].end()));
    exposed_max.push_back(*std::max_element(f[3].begin(), f[3].end()));
  }
  s.steps = step;
  s.step = median(step);
  s.compute = median(compute);
  s.compute_max = median(compute_max);
  s.comm = median(comm);
  s.exposed = median(exposed);
  s.exposed_min = median(exposed_min);
  s.exposed_max = median(exposed_max);
  return s;
}

void report(const Options& o, const Profile& p, const Summary& s, int ranks, bool reduce) {
  const std::string nbc = reduce && p.mode == "non_blocking" ? o.nbc : "-";
  std::printf(
      "step_replay: model=%s ranks=%d mode=%s nbc=%s simulated=%s steps=%d step_ms=%.4f compute_ms=%.4f "
      "comm_ms=%.4f exposed_ms=%.4f exposed_min_ms=%.4f exposed_max_ms=%.4f profile_compute_ms=%.4f\n",
      p.model.c_str(), ranks, reduce ? p.mode.c_str() : "none", nbc.c_str(), kSimulated ? "yes" : "no", o.steps,
      s.step * 1e3, s.compute * 1e3, s.comm * 1e3, s.exposed * 1e3, s.exposed_min * 1e3, s.exposed_max * 1e3,
      p.compute_s() * 1e3);
  std::fflush(stdout);
  if (o.json_out.empty()) return;
  nlohmann::json j = {{"schema", "dtnn.step_replay/1"},
                      {"profile", o.profile},
                      {"model", p.model},
                      {"ranks", ranks},
                      {"mode", reduce ? p.mode : "none"},
                      {"nbc", nbc},
                      {"simulated", kSimulated},
                      {"steps", o.steps},
                      {"warmup", o.warmup},
                      {"buckets", reduce && p.mode == "non_blocking" ? p.buckets.size() : (reduce ? 1 : 0)},
                      {"bytes_per_step", reduce ? static_cast<double>(p.total_floats) * sizeof(float) : 0.0},
                      {"profile_compute_s", p.compute_s()},
                      {"step_s", s.step},
                      {"compute_s", s.compute},
                      {"compute_max_s", s.compute_max},
                      {"comm_s", s.comm},
                      {"exposed_s", s.exposed},
                      {"exposed_min_s", s.exposed_min},
                      {"exposed_max_s", s.exposed_max},
                      {"step_max_s_per_step", s.steps}};
  std::ofstream out(o.json_out);
  out << j.dump(2) << "\n";
  if (!out) std::fprintf(stderr, "step_replay: cannot write %s\n", o.json_out.c_str());
}

int run(int argc, char** argv, int rank, int ranks) {
  Options o;
  Profile p;
  try {
    o = parse_args(argc, argv);
    p = load_profile(o.profile, o.mode);
    if (o.global_batch > 0) rescale_for_global_batch(p, o.global_batch, ranks);
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "step_replay: %s%s%s", e.what(), *e.what() ? "\n" : "", kUsage);
    return 2;
  }
  const bool reduce = ranks > 1;
  if (kSimulated && reduce && p.mode == "non_blocking" && o.nbc == "mpi") {
    // SimGrid's MPI_Iallreduce posts a receive of the whole bucket from every other rank into its own
    // temporary: p (p - 1) buckets of host memory at once (resnet20 on 256 ranks: 65 GB). Refused past 4 GiB.
    int64_t largest = 0;
    for (const ProfileBucket& b : p.buckets) largest = std::max(largest, b.floats);
    const double bytes = static_cast<double>(ranks) * (ranks - 1) * static_cast<double>(largest) * sizeof(float);
    if (bytes > 4.0 * (1 << 30)) {
      if (rank == 0)
        std::fprintf(stderr, "step_replay: --nbc mpi under SimGrid would hold %.1f GiB of receive buffers on %d ranks "
                     "(SimGrid's MPI_Iallreduce receives every rank's whole bucket); use --nbc binomial\n",
                     bytes / (1 << 30), ranks);
      return 2;
    }
  }
  FloatBuffer slab(static_cast<size_t>(p.total_floats));
  std::unique_ptr<FloatBuffer> tmp;
  std::unique_ptr<Sums> sums;
  // Under SimGrid a blocking sum reads a separate (shared) send buffer, not MPI_IN_PLACE: SimGrid 3.32 copies an
  // in-place buffer into a private temporary per rank, and the messages sent from that private copy are then
  // copied for real into the algorithm's private receive buffers, 2 x the gradients per rank of resident memory
  // (vgg16 on 16 ranks: 17 GB). From shared buffers SMPI copies nothing. The simulated time is the same.
  if (reduce && (p.mode == "non_blocking" || kSimulated))
    tmp = std::make_unique<FloatBuffer>(static_cast<size_t>(p.total_floats));
  if (reduce && p.mode == "non_blocking") {
    if (o.nbc == "mpi") sums = std::make_unique<MpiSums>(p, slab.data, tmp->data);
    else sums = std::make_unique<BinomialSums>(p, slab.data, tmp->data, rank, ranks);
  }
  MPI_Op sum = make_sum_op();
  const int total = o.warmup + o.steps;
  std::vector<double> mine(static_cast<size_t>(total) * 4);
  int bad_sums = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < total; ++k) {
    if (o.check) std::fill(slab.data, slab.data + p.total_floats, 1.0f);
    const StepTimes t = replay_step(p, sums.get(), slab.data, kSimulated && tmp ? tmp->data : nullptr, sum, reduce);
    if (o.check && !sums_are_right(p, slab.data, reduce ? ranks : 1)) ++bad_sums;
    const double v[4] = {t.step, t.compute, t.comm, t.exposed};
    std::copy(v, v + 4, mine.begin() + static_cast<std::ptrdiff_t>(k) * 4);
  }
  if (sum != MPI_SUM) MPI_Op_free(&sum);
  std::vector<double> all(rank == 0 ? mine.size() * static_cast<size_t>(ranks) : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
             MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int bad_total = 0;
  MPI_Reduce(&bad_sums, &bad_total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank != 0) return 0;
  report(o, p, summarise(all, ranks, total, o.warmup), ranks, reduce);
  if (o.check) {
    std::printf("step_replay: check %s (%d wrong step sums over all ranks)\n", bad_total ? "FAILED" : "ok", bad_total);
    if (bad_total) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int rc = run(argc, argv, rank, ranks);
  MPI_Finalize();
  return rc;
}
