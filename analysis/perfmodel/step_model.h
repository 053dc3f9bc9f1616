// The analytic step model: the replay of STEP_PROFILE.md as an event schedule, for p ranks.
//
// With s the compute scale (1 for weak scaling; ceil(B/p)/batch_size for strong scaling of a global batch B:
// the trainer spreads the remainder, and the step is its largest share's; B < p is refused, as dtnn train
// refuses it) and every rank running the same profile (no stragglers):
//
//   t_fwd_end  = other_s + s·(Σ_i forward_s[i] + loss_s)
//   backward:  t_i = t_{i+1} + s·backward_s[i], i = L−1 … 1 (the Input layer 0 has no backward)
//
//   blocking (or p = 1, where nothing is summed):
//     step = t_1 + T_allreduce(p, 4·total_floats) + total_floats·update_s_per_float
//
//   non_blocking, buckets b = 0 … B−1 in launch order:
//     start_b = t_i of the first layer i (from the top) with i ≤ ready_after_b; buckets not started by then
//               start when backward ends (t_1)
//     one communication channel, first come first served in start order:
//       begin_b = max(start_b, end_{b−1}),  end_b = begin_b + T_iallreduce(p, 4·floats_b)
//     waits in launch order, each followed by its bucket's update:
//       w_0 = t_1;  w_{b+1} = max(w_b, end_b) + floats_b·update_s_per_float;  step = w_B
//
//   compute  = other_s + s·(Σ forward + loss + Σ backward) + total_floats·update_s_per_float
//   exposed  = step − compute            (time the rank waits for sums after its own work)
//   comm     = Σ_b (end_b − begin_b)     (busy time of the channel; blocking: the one allreduce)
//   samples/s: weak p·batch_size/step; strong B/step.   efficiency: weak step(1)/step(p); strong
//   step(1)/(p·step(p)) with step(1) the prediction for one rank with the whole batch.
//
// Ranks sharing a node compute slower than one alone (shared caches, memory bandwidth, clock): with the node's
// contention ceiling C(n) -- n independent 1-rank copies on one node reach C(n) times one copy's samples/s,
// experiments/contention_ceiling.sh measures it -- every compute term above is multiplied by n / C(n) for the
// n = min(p, ranks_per_node) ranks that share a node (StepOptions::ceiling; between measured counts, C is
// interpolated linearly, beyond the largest its ratio C(n)/n is kept; none given: 1, one rank's speed).
//
// Ranks wait for each other: a sum cannot finish before the slowest rank's contribution, and a rank's step
// time varies from step to step (the OS, the hypervisor, the caches). With the relative step-time jitter J (the
// standard deviation of a rank's step compute over its mean; experiments/contention_ceiling.sh measures it on
// independent copies, StepOptions::step_jitter), the slowest of p ranks ends its backward pass
// J * compute * E[max of p standard normals] later than the mean rank (0.564 J for 2 ranks, 1.03 J for 4,
// 1.77 J for 16): that wait is added where the backward pass ends, before the sums that need every rank.
//
// Assumptions (what the model leaves out):
//   - One channel: sums never run concurrently, and a sum never slows compute (no contention for cores or
//     memory bandwidth between the backward pass and communication beyond the ceiling's).
//   - Progress as assumed: a started non-blocking sum proceeds at full speed until done, as if MPI had a
//     progress thread. Open MPI 4.1 has none; dtnn tests the oldest outstanding request after every layer
//     (gradient_reducer.cpp), so a real sum advances only while a rank is inside an MPI call and can finish
//     later than modelled (the model is then optimistic about overlap).
//   - The cost of MPI calls themselves (start, test: microseconds) is not counted.
//   - Every rank is identical but for the jitter above, independent from rank to rank and normal: the
//     slowest rank's step is everybody's step.
//   - Strong scaling is linear in the samples per rank (untrue for tiny per-rank batches; fractional
//     batches are allowed).
//   - Collective times from collective_model.h: the algorithm Open MPI (or SimGrid) picks for the bucket's
//     size, the platform's link for p ranks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/perfmodel/collective_model.h"
#include "analysis/perfmodel/step_profile.h"

namespace dtnn::perf {

struct StepOptions {
  std::string mode = "non_blocking";  // blocking | non_blocking
  bool strong = false;                // strong scaling (else weak)
  double global_batch = 0.0;          // strong scaling's B (0: the profile's batch_size)
  CollectiveRules rules = CollectiveRules::ompi41;
  std::optional<AllreduceAlgorithm> algorithm;  // force one algorithm for every sum (default: the rules)
  // The node's contention ceiling: ranks sharing a node -> their summed speed-up as independent copies (see
  // above); empty: ranks compute as fast beside each other as alone.
  std::map<int, double> ceiling;
  // The relative step-time jitter J of a rank (see above); 0: every step alike.
  double step_jitter = 0.0;
};

// E[max of n independent standard normals] (0 for n = 1; 0.5642 for 2, 1.0294 for 4, 1.7660 for 16), by
// quadrature of n x phi(x) Phi(x)^(n-1).
double expected_max_normal(int n);

// The compute slowdown of a rank beside n - 1 others on its node: n / C(n) from the ceiling (1 for n <= 1 or
// no ceiling). Throws dtnn::Error for a ceiling entry outside (0, n] or a count below 2.
double contention_slowdown(const std::map<int, double>& ceiling, int n);

// "2:1.91,4:3.5" (experiments/contention_ceiling.sh's RANKS:CEILING) -> the map; throws dtnn::Error naming the
// bad entry.
std::map<int, double> parse_ceiling(const std::string& text);

struct BucketEvent {
  size_t bucket = 0;
  double bytes = 0.0;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;
  double start_s = 0.0, begin_s = 0.0, end_s = 0.0, waited_until_s = 0.0;
};

struct StepPrediction {
  int ranks = 1;
  double samples_per_rank = 0.0;
  double step_s = 0.0, compute_s = 0.0, exposed_s = 0.0, comm_s = 0.0;
  double backward_end_s = 0.0;
  double samples_per_s = 0.0;
  double efficiency = 0.0;  // set by predict_scaling
  std::vector<BucketEvent> events;  // one per sum (blocking: one)
  std::string algorithms;           // the distinct algorithms used, e.g. "binomial" or "ring+rabenseifner"
};

StepPrediction predict_step(const StepProfile& profile, const Platform& platform, int ranks, const StepOptions& options);

// One prediction per rank count, each with its efficiency against the one-rank prediction (computed even
// when 1 is not in `ranks`).
std::vector<StepPrediction> predict_scaling(const StepProfile& profile, const Platform& platform,
                                            const std::vector<int>& ranks, const StepOptions& options);

}  // namespace dtnn::perf
