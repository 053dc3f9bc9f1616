#include "analysis/perfmodel/collective_model.h"

#include <climits>
#include <cmath>
#include <utility>
#include <vector>

#include "core/error.h"

namespace dtnn::perf {

namespace {

struct Pof2 {
  int p2 = 1;     // largest power of two <= p
  int log2 = 0;   // log2(p2)
  int ceil = 0;   // ceil(log2 p)
};

Pof2 pof2(int p) {
  Pof2 r;
  while (r.p2 * 2 <= p) {
    r.p2 *= 2;
    ++r.log2;
  }
  r.ceil = r.p2 == p ? r.log2 : r.log2 + 1;
  return r;
}

}  // namespace

AllreduceAlgorithm effective_algorithm(AllreduceAlgorithm a, int p, double bytes) {
  const double count = bytes / 4.0;
  if (a == AllreduceAlgorithm::ring && count < p) return AllreduceAlgorithm::recursive_doubling;
  if (a == AllreduceAlgorithm::rabenseifner && count < pof2(p).p2) return AllreduceAlgorithm::linear;
  return a;
}

namespace {

// libnbc's binomial broadcast (allred_sched_diss after the reduce): a rank posts all its sends in one round, so
// they share its link and a rank with k children delivers to each after α + k·n·β (equal shares). Returns the
// α and n·β counts of the last rank to receive (most n·β, then most α): for p = 2^L the chain 0, 1, 3, 7, ...
// with L, L−1, ..., 1 children, L·α + L(L+1)/2·n·β.
std::pair<int, double> libnbc_bcast_path(int p) {
  int maxr = 0;
  while ((1 << maxr) < p) ++maxr;
  std::vector<std::pair<int, double>> arrival(static_cast<size_t>(p), {0, 0.0});  // (α count, n·β count)
  std::pair<int, double> last{0, 0.0};
  for (int v = 0; v < p; ++v) {  // a parent's vrank is below its children's
    std::vector<int> children;
    for (int r = 0; r < maxr; ++r)
      if (v + (1 << r) < p && (v < (1 << r) || v == 0)) children.push_back(v + (1 << r));
    for (int c : children) {
      arrival[static_cast<size_t>(c)] = {arrival[static_cast<size_t>(v)].first + 1,
                                         arrival[static_cast<size_t>(v)].second + static_cast<double>(children.size())};
      const auto& a = arrival[static_cast<size_t>(c)];
      if (a.second > last.second || (a.second == last.second && a.first > last.first)) last = a;
    }
  }
  return last;
}

}  // namespace

const char* algorithm_name(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::ring: return "ring";
    case AllreduceAlgorithm::recursive_doubling: return "recursive_doubling";
    case AllreduceAlgorithm::rabenseifner: return "rabenseifner";
    case AllreduceAlgorithm::binomial: return "binomial";
    case AllreduceAlgorithm::linear: return "linear";
    case AllreduceAlgorithm::all_to_all: return "all_to_all";
  }
  return "?";
}

AllreduceAlgorithm parse_algorithm(const std::string& name) {
  if (name == "ring" || name == "lr") return AllreduceAlgorithm::ring;
  if (name == "recursive_doubling" || name == "rd" || name == "rdb") return AllreduceAlgorithm::recursive_doubling;
  if (name == "rabenseifner" || name == "rab") return AllreduceAlgorithm::rabenseifner;
  if (name == "binomial") return AllreduceAlgorithm::binomial;
  if (name == "linear") return AllreduceAlgorithm::linear;
  if (name == "all_to_all") return AllreduceAlgorithm::all_to_all;
  fail("unknown allreduce algorithm '", name,
       "' (ring, recursive_doubling, rabenseifner, binomial, linear, all_to_all, or auto)");
}

CostTerms allreduce_terms(AllreduceAlgorithm a, int p, double n) {
  DTNN_CHECK(p >= 1, "ranks must be >= 1 (got ", p, ")");
  DTNN_CHECK(n >= 0, "bytes must be >= 0 (got ", n, ")");
  if (p == 1 || n == 0) return {};
  const Pof2 q = pof2(p);
  const double L = q.log2, pp = p, p2 = q.p2;
  switch (effective_algorithm(a, p, n)) {
    case AllreduceAlgorithm::ring:
      return {2.0 * (pp - 1), 2.0 * (pp - 1) / pp * n, (pp - 1) / pp * n};
    case AllreduceAlgorithm::recursive_doubling:
      if (q.p2 == p) return {L, L * n, L * n};
      return {L + 2, (L + 2) * n, (L + 1) * n};
    case AllreduceAlgorithm::rabenseifner:
      if (q.p2 == p) return {2 * L, 2.0 * (pp - 1) / pp * n, (pp - 1) / pp * n};
      return {2 * L + 3, (2.0 * (p2 - 1) / p2 + 2.0) * n, ((p2 - 1) / p2 + 0.5) * n};
    case AllreduceAlgorithm::binomial: {
      const std::pair<int, double> bcast = libnbc_bcast_path(p);
      return {static_cast<double>(q.ceil + bcast.first), (q.ceil + bcast.second) * n, static_cast<double>(q.ceil) * n};
    }
    case AllreduceAlgorithm::linear:
      return {2.0 * (pp - 1), 2.0 * (pp - 1) * n, (pp - 1) * n};
    case AllreduceAlgorithm::all_to_all:
      return {1.0, (pp - 1) * n, (pp - 1) * n};
  }
  return {};
}

double allreduce_time(AllreduceAlgorithm a, int p, double bytes, const LinkCost& link) {
  const CostTerms t = allreduce_terms(a, p, bytes);
  return t.c_alpha * link.alpha + t.c_beta * link.beta + t.c_gamma * link.gamma;
}

const char* rules_name(CollectiveRules r) { return r == CollectiveRules::ompi41 ? "ompi41" : "simgrid"; }

CollectiveRules parse_rules(const std::string& name) {
  if (name == "ompi41") return CollectiveRules::ompi41;
  if (name == "simgrid") return CollectiveRules::simgrid;
  fail("unknown collective rules '", name, "' (ompi41: Open MPI 4.1 tuned + libnbc; simgrid: SimGrid SMPI's ompi selector)");
}

AllreduceAlgorithm choose_allreduce(int p, double bytes, CollectiveRules /*rules*/) {
  // SimGrid 3.31+'s ompi selector is this table too (collective_model.h), so `rules` matters only to Iallreduce.
  // Open MPI 4.1 coll/tuned, commutative operations, as a table: for communicators below `ranks_below`, the
  // first row whose size bound exceeds the message picks the algorithm, else `otherwise`. The source's
  // numbers: 2 nonoverlapping (binomial here), 3 recursive doubling, 4 ring, 5 segmented ring (ring here),
  // 6 Rabenseifner.
  using A = AllreduceAlgorithm;
  struct Rule {
    int ranks_below;
    std::vector<std::pair<double, A>> below;
    A otherwise;
  };
  static const std::vector<Rule> kTuned = {
      {4, {{8, A::ring}, {4096, A::recursive_doubling}, {8192, A::ring}, {16384, A::recursive_doubling},
           {65536, A::ring}, {262144, A::ring}}, A::rabenseifner},
      {8, {{16, A::ring}, {8192, A::recursive_doubling}}, A::rabenseifner},
      {16, {{8192, A::recursive_doubling}}, A::rabenseifner},
      {32, {{64, A::ring}, {4096, A::recursive_doubling}}, A::rabenseifner},
      {64, {{128, A::ring}}, A::rabenseifner},
      {128, {{262144, A::recursive_doubling}}, A::rabenseifner},
      {256, {{131072, A::binomial}, {262144, A::recursive_doubling}}, A::rabenseifner},
      {512, {{4096, A::binomial}}, A::rabenseifner},
      {2048, {{2048, A::binomial}, {16384, A::recursive_doubling}}, A::rabenseifner},
      {4096, {{2048, A::binomial}, {4096, A::ring}, {16384, A::recursive_doubling}}, A::rabenseifner},
      {INT_MAX, {{2048, A::binomial}, {16384, A::ring}, {32768, A::recursive_doubling}}, A::rabenseifner},
  };
  for (const Rule& r : kTuned) {
    if (p >= r.ranks_below) continue;
    for (const auto& [bound, a] : r.below)
      if (bytes < bound) return a;
    return r.otherwise;
  }
  return A::rabenseifner;
}

AllreduceAlgorithm choose_iallreduce(int p, double bytes, bool in_place, CollectiveRules rules) {
  using A = AllreduceAlgorithm;
  if (rules == CollectiveRules::simgrid) return A::all_to_all;
  if (p < 4 || bytes < 65536 || in_place) return A::binomial;
  if (bytes / 4.0 >= pof2(p).p2) return A::rabenseifner;
  return A::ring;
}

// ---- platforms ------------------------------------------------------------------------------------
//
// The one table of platform numbers. β = 1 / bandwidth (bytes/s); γ = 1 / reduction rate.
//   CPU reduction: γ = 7.5e-11 s/B (13 GB/s), measured on this project's 2-vCPU Xeon (Emerald Rapids) VM
//     summing 4-16 MiB float vectors in one thread (a[i] += b[i], -O3 AVX2), the loop Open MPI's op runs.
//   GPU reduction: γ = 1e-12 s/B (HBM at ~1 TB/s): an assumption, negligible beside any link's β.
//   localhost2, localhost2_tcp: least-squares fits (relative residuals, 4 B..16 MiB, γ fixed at the CPU
//     rate, Open MPI 4.1 rules) of the committed 2-rank MPI_Allreduce measurements
//     results/baselines/allreduce_{shm,tcp}_xeon-emr_2core.json (Open MPI 4.1.4); reproduce with
//     `dtnn predict --fit-collectives FILE --fit-max-bytes 16777216 ...`. Residuals: shared memory rms 29 %
//     (max 57 %: 8-64 KiB run 2x slower than any α + nβ line), TCP rms 15 % (max 41 %). 32 MiB and up are left
//     out: glibc's mmap threshold makes them a different regime (allreduce_2core.md).
//   eth10g, ib100, nvlink8: nominal figures (line rate and a typical MPI latency), the same as the SimGrid
//     platform files of suites/step_replay/platforms/ are to use.
const std::vector<Platform>& platform_presets() {
  constexpr double kCpuGamma = 7.5e-11;
  static const LinkCost kShm{5.203e-7, 1.5178e-10, kCpuGamma};  // alpha 0.520 us, 1/beta 6.59 GB/s
  static const LinkCost kTcp{5.941e-6, 2.8753e-10, kCpuGamma};  // alpha 5.94 us, 1/beta 3.48 GB/s
  static const LinkCost kEth{20e-6, 8.0 / 10e9, kCpuGamma};
  static const LinkCost kIb{1.5e-6, 8.0 / 100e9, kCpuGamma};
  static const LinkCost kNvlink{3e-6, 1.0 / 300e9, 1e-12};      // nvlink8.xml: 300 GBps, 2 x 1.5 us
  static const LinkCost kNvlinkV100{3e-6, 1.0 / 150e9, 1e-12};  // NVLink 2 on a V100 (DGX-1)
  static const LinkCost kRoce25{5e-6, 8.0 / 25e9, 1e-12};
  static const LinkCost kPcie3{5e-6, 1.0 / 12e9, 1e-12};
  static const LinkCost kIb4x100{1.5e-6, 8.0 / 400e9, 1e-12};
  static const std::vector<Platform> presets = {
      {"eth10g", "10 Gb/s Ethernet cluster, one rank per node", kEth, kShm, 1,
       "10 Gb/s line rate (beta 0.8 ns/B), 20 us MPI latency (typical for TCP over 10 GbE); CPU gamma"},
      {"ib100", "100 Gb/s InfiniBand fat-tree (full bisection), one rank per node", kIb, kShm, 1,
       "100 Gb/s line rate (beta 0.08 ns/B), 1.5 us MPI latency (typical EDR); CPU gamma"},
      {"nvlink8", "nodes of 8 GPUs joined by NVLink-class links; nodes on ib100", kIb, kNvlink, 8,
       "intra-node 300 GB/s each way per GPU (NVLink 3 on an A100) and 3 us, as suites/step_replay/platforms/nvlink8.xml; GPU "
       "gamma; inter-node: ib100"},
      // The published clusters of the sanity checks (analysis/perfmodel/published_sanity.sh): nominal
      // line rates as for eth10g and ib100, GPU gamma; NCCL's ring is forced there with --algorithm ring.
      {"horovod_roce25", "Horovod's benchmark cluster: servers of 4 Pascal GPUs (PCIe) on 25 Gb/s RoCE", kRoce25,
       kPcie3, 4,
       "Horovod docs/benchmarks.rst (128 servers x 4 Pascal GPUs, RoCE 25 Gbit/s): 25 Gb/s line rate (beta 0.32 "
       "ns/B), 5 us latency; intra-node PCIe 3.0 x16 at 12 GB/s; GPU gamma"},
      {"dgx1v_ib4x100", "DDP's benchmark cluster: DGX-1 nodes of 8 V100 (NVLink), 4 x 100 Gb/s InfiniBand each",
       kIb4x100, kNvlinkV100, 8,
       "pytorch benchmarks/distributed/ddp/README.md (8 V100 per node, 4 x 100 Gb IB): a ring per NIC, 50 GB/s "
       "per node, 1.5 us; intra-node V100 NVLink 2, 150 GB/s and 3 us"},
      {"localhost2", "this 2-vCPU VM: 2 ranks over Open MPI 4.1 shared memory (vader)", kShm, kShm, 2,
       "fit of results/baselines/allreduce_shm_xeon-emr_2core.json"},
      {"localhost2_tcp", "this 2-vCPU VM: 2 ranks over TCP loopback (--mca btl self,tcp)", kTcp, kTcp, 2,
       "fit of results/baselines/allreduce_tcp_xeon-emr_2core.json"},
  };
  return presets;
}

const Platform& find_platform(const std::string& name) {
  std::string known;
  for (const Platform& p : platform_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  fail("unknown platform '", name, "' (known: ", known, ")");
}

CollectiveCost blocking_allreduce(const Platform& platform, int p, double bytes, CollectiveRules rules,
                                  const AllreduceAlgorithm* forced) {
  const AllreduceAlgorithm a = effective_algorithm(forced ? *forced : choose_allreduce(p, bytes, rules), p, bytes);
  return {a, allreduce_time(a, p, bytes, platform.link_for(p))};
}

CollectiveCost nonblocking_allreduce(const Platform& platform, int p, double bytes, CollectiveRules rules,
                                     const AllreduceAlgorithm* forced) {
  const AllreduceAlgorithm a =
      effective_algorithm(forced ? *forced : choose_iallreduce(p, bytes, true, rules), p, bytes);
  return {a, allreduce_time(a, p, bytes, platform.link_for(p))};
}

}  // namespace dtnn::perf
