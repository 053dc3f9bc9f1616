// Cost of one MPI allreduce (sum) of n bytes over p ranks, by algorithm, and the algorithm Open MPI picks.
//
// Link model (Hockney, as Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations
// in MPICH", IJHPCA 2005): sending a message of m bytes costs α + m·β; reducing m bytes locally costs m·γ.
// α in seconds, β and γ in seconds per byte. Let p' = 2^⌊log2 p⌋ (the largest power of two ≤ p),
// L = log2 p' and r = p − p' (the ranks above it).
//
//   ring                (Open MPI tuned 4 and 5; segmented ring costs the same here: its segments pipeline
//                        the same 2(p−1) steps):
//       T = 2(p−1)·α + 2(p−1)/p·n·β + (p−1)/p·n·γ                        (any p; p−1 reduce-scatter steps of
//                                                                          n/p bytes, p−1 allgather steps)
//       Open MPI falls back to recursive doubling when the element count is below p.
//   recursive doubling  (tuned 3):
//       p = p':  T = L·(α + n·β + n·γ)
//       p > p':  the first 2r ranks pair up: even ranks send their vector to the odd ones (α + nβ + nγ),
//                L rounds among p' ranks, then the result goes back (α + nβ):
//                T = (L + 2)·α + (L + 2)·n·β + (L + 1)·n·γ
//   Rabenseifner        (tuned 6, reduce-scatter by recursive halving + allgather by recursive doubling):
//       p = p':  T = 2L·α + 2(p−1)/p·n·β + (p−1)/p·n·γ
//       p > p':  the first 2r ranks exchange halves (α + n/2·β + n/2·γ), odd ranks send their reduced
//                half to the even ones (α + n/2·β), the p' remaining ranks run the power-of-two algorithm,
//                and the even ranks send the result to the odd ones (α + n·β):
//                T = (2L + 3)·α + (2(p'−1)/p' + 2)·n·β + ((p'−1)/p' + 1/2)·n·γ
//       (Open MPI, coll_base_allreduce.c ompi_coll_base_allreduce_intra_redscat_allgather; it falls back to
//       a linear allreduce when the element count is below p'.)
//   binomial            (libnbc's schedule: reduce to rank 0 along a binomial tree, one message a round, then
//                        broadcast along one in which every rank posts all its sends at once; they share its link):
//       p = 2^L:  T = L·(α + n·β + n·γ)  +  L·α + L(L+1)/2·n·β          (reduce + broadcast, whose critical path
//                 is the chain 0 → 1 → 3 → 7 ... of ranks with L, L−1, ... 1 children; any p: that path counted
//                 on the tree, collective_model.cpp libnbc_bcast_path). 2 ranks: 2α + 2nβ + nγ; 4: 4α + 5nβ +
//                 2nγ; 256: 16α + 44nβ + 8nγ (a tree sending one child a round would cost 2L·nβ: 16).
//       libnbc's in-place MPI_Iallreduce always runs this (nbc_iallreduce.c: p < 4, or < 64 KiB, or a
//       non-commutative op, or MPI_IN_PLACE — dtnn's buckets are in place), and tuned's "nonoverlapping"
//       (2: tuned reduce + tuned bcast) is approximated by it (tuned picks it only below 128 KiB at 128+ ranks).
//   linear              (reduce to rank 0 and broadcast, one message per rank): T = 2(p−1)·(α + n·β) + (p−1)·n·γ
//   all_to_all          (SimGrid SMPI's MPI_Iallreduce: every rank sends its vector to every other and
//                        reduces what it receives; one link per rank):  T = α + (p−1)·n·β + (p−1)·n·γ
//
// Choice of algorithm (CollectiveRules):
//   ompi41: MPI_Allreduce as Open MPI 4.1's coll/tuned fixed decision function for commutative operations
//           (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, ompi_coll_tuned_allreduce_intra_dec_fixed, the
//           tables "generated ... using the ompi-collectives-tuning package", in 4.1.0 through 4.1.x; this
//           machine runs 4.1.4), MPI_Iallreduce as libnbc's (ompi/mca/coll/libnbc/nbc_iallreduce.c): binomial
//           in place, else binomial below 4 ranks or 64 KiB, else Rabenseifner when count ≥ p', else ring.
//   simgrid: SimGrid SMPI 3.31 and later (this machine: Debian's 3.32): MPI_Allreduce under
//           smpi/coll-selector:ompi is the same table as ompi41 (src/smpi/colls/smpi_openmpi_selector.cpp,
//           "Updated 02/2022" from Open MPI 4's coll_tuned_decision_fixed.c; its algorithms lr, ompi_ring_segmented,
//           rdb, rab_rdb and redbcast cost as ring, ring, recursive doubling, Rabenseifner and binomial here).
//           SimGrid 3.30 and earlier had Open MPI 1.x's rule (recursive doubling below 10,000 B, else ring): not
//           modelled. SMPI's MPI_Iallreduce is all_to_all (src/smpi/colls/smpi_nbc_impl.cpp). SimGrid charges no
//           time for the reduction itself (its op runs on the host, unsimulated): model a SimGrid run with γ = 0.
//
// Platforms: one link for ranks on different nodes and one inside a node. A collective whose ranks all fit in
// one node (p ≤ ranks_per_node) uses the intra-node link; any larger one uses the inter-node link for every
// step (the slowest link paces a ring; the intra-node rounds of recursive doubling and Rabenseifner are not
// told apart, and ranks of one node sharing its network interface are not modelled: presets with several
// ranks per node overestimate latency and underestimate contention).
#pragma once

#include <string>
#include <vector>

namespace dtnn::perf {

struct LinkCost {
  double alpha = 0.0;  // seconds per message
  double beta = 0.0;   // seconds per byte sent
  double gamma = 0.0;  // seconds per byte reduced
};

enum class AllreduceAlgorithm { ring, recursive_doubling, rabenseifner, binomial, linear, all_to_all };
const char* algorithm_name(AllreduceAlgorithm a);  // "ring", "recursive_doubling", ...
// Parses the names above (also "rd", "rdb", "rab", "lr"); throws dtnn::Error listing them.
AllreduceAlgorithm parse_algorithm(const std::string& name);

// The algorithm Open MPI runs when asked for `a`: ring with fewer elements than ranks runs recursive
// doubling, Rabenseifner with fewer elements than the largest power of two <= p the linear allreduce. What
// the cost functions below charge, and what predictions and fits name.
AllreduceAlgorithm effective_algorithm(AllreduceAlgorithm a, int p, double bytes);

// Seconds for one allreduce of `bytes` (float elements: bytes / 4) over p ranks with the given link.
// p == 1 costs nothing. Applies Open MPI's fallbacks (ring and Rabenseifner with too few elements).
double allreduce_time(AllreduceAlgorithm a, int p, double bytes, const LinkCost& link);

// The coefficients of α, β and γ in allreduce_time (T = cα·α + cβ·β + cγ·γ): what the fit regresses on.
struct CostTerms {
  double c_alpha = 0.0, c_beta = 0.0, c_gamma = 0.0;
};
CostTerms allreduce_terms(AllreduceAlgorithm a, int p, double bytes);

enum class CollectiveRules { ompi41, simgrid };
const char* rules_name(CollectiveRules r);  // "ompi41" | "simgrid"
CollectiveRules parse_rules(const std::string& name);

// The algorithm of MPI_Allreduce (blocking) and of MPI_Iallreduce (non-blocking; in_place: MPI_IN_PLACE as
// dtnn calls it) for a commutative sum of `bytes` float bytes over p ranks.
AllreduceAlgorithm choose_allreduce(int p, double bytes, CollectiveRules rules = CollectiveRules::ompi41);
AllreduceAlgorithm choose_iallreduce(int p, double bytes, bool in_place = true,
                                     CollectiveRules rules = CollectiveRules::ompi41);

// A machine one may not have: its links and how many ranks share a node.
struct Platform {
  std::string name;
  std::string description;
  LinkCost inter;          // between nodes
  LinkCost intra;          // between ranks of one node
  int ranks_per_node = 1;
  std::string source;      // where the numbers come from
  // The link a collective over p ranks is costed with (see above).
  const LinkCost& link_for(int p) const { return p <= ranks_per_node ? intra : inter; }
};

// Built-in platforms, one table with its sources (collective_model.cpp): eth10g, ib100, nvlink8 (nominal,
// as the SimGrid platform files of suites/step_replay/platforms/), horovod_roce25 and dgx1v_ib4x100 (the published clusters
// of the sanity checks, nominal), localhost2 and localhost2_tcp (fitted here).
const std::vector<Platform>& platform_presets();
// A preset by name; throws dtnn::Error listing the known names.
const Platform& find_platform(const std::string& name);

// One collective of a step: which algorithm, and its seconds.
struct CollectiveCost {
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;
  double seconds = 0.0;
};
// Forced: use `forced` for every collective instead of the rules (nullptr: the rules decide).
CollectiveCost blocking_allreduce(const Platform& platform, int p, double bytes, CollectiveRules rules,
                                  const AllreduceAlgorithm* forced = nullptr);
CollectiveCost nonblocking_allreduce(const Platform& platform, int p, double bytes, CollectiveRules rules,
                                     const AllreduceAlgorithm* forced = nullptr);

}  // namespace dtnn::perf
