// Uneven devices in one data-parallel job: each rank's share of the global batch (--rank_batch_shares),
// and a slowdown switch to make one rank a slower device (--straggler_factor).
//
// Shares. "" (the default): the global batch is split evenly (the first global % ranks ranks take one
// more). "3,1": one positive weight per rank; a global batch of n samples is split in proportion (largest
// remainders; ties to the lower rank), rank r taking the samples after ranks 0..r-1's. "auto": even for the
// first steps, then the weights are each rank's samples per second of busy time (its compute, straggler
// sleeps included, its waits for the others excluded) over kAutoSteps steps after a warm-up step, fixed
// for the rest of the run.
//
// Why the result equals training on the whole global batch: dtnn scales every rank's loss gradient by
// 1 / global batch (train/losses.h), not by 1 / local batch, and sums the ranks' gradients. A rank with 3/4
// of the samples contributes 3/4 of the sum, whatever the split: the update is the global batch's mean
// gradient (tests/parallel/test_mpi_equivalence.cpp checks 3:1 on 2 ranks against 1 rank within 1e-5).
// Per-rank BatchNorm statistics do differ with the split (as with even shares); --sync_batchnorm sums them.
//
// Every rank computes every rank's count from the same weights: no communication, the same split
// everywhere. A rank gets at least one sample whenever n >= ranks (a rank with none would still sum its
// zero gradient, but layers that communicate inside the step need every rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

struct BatchShares {
  bool automatic = false;       // "auto": weights measured, then fixed
  std::vector<double> weights;  // one per rank; empty: even
};

// Parses "", "auto" or "W0,W1,...": positive finite numbers. Throws dtnn::Error with the reason otherwise.
BatchShares parse_batch_shares(const std::string& text);

// Rank `rank`'s offset and count in a batch of n split by `weights` (empty: evenly over `ranks`).
void split_batch(int64_t n, const std::vector<double>& weights, int ranks, int rank, int64_t* offset, int64_t* count);

// The most samples rank `rank` ever takes of batches of at most `global` samples with these weights (the
// per-rank buffers the model is built for): floor(global x its normalised weight) + 1, at most global (short
// batches with fewer samples than ranks skip the one-sample-each correction that a full batch may apply).
// Automatic shares may give any rank almost all of it: global.
int64_t largest_rank_batch(int64_t global, const BatchShares& shares, int ranks, int rank);

// Weights for "auto" from each rank's busy seconds per sample (> 0): their inverses, normalised to sum 1.
std::vector<double> weights_from_rates(const std::vector<double>& seconds_per_sample);

// One number per --rank_batch_shares value that ranks must agree on (train/rank_agreement.h): 0 even (or
// one rank), 1 auto, else a hash of the normalised weights, on which every split depends ("3,1" and
// "0.75,0.25" agree; "3,1" and "2.9,1", which split a full batch of 64 alike but a short one of 10 not, do not).
uint64_t shares_fingerprint(const std::string& option, int ranks);

// "384,128": every rank's count of a batch of n samples (weights as given; RankShares::format for a trainer's).
std::string format_split(int64_t n, const std::vector<double>& weights, int ranks);

// --straggler_factor "R:F": rank R's steps take F times their compute (F >= 1; "" or F = 1: none).
struct SlowRank {
  int rank = -1;
  double factor = 1.0;
};
SlowRank parse_slow_rank(const std::string& text);

// The steps auto shares measure (after one warm-up step).
constexpr int kAutoSteps = 4;

class Communicator;

// The split a data-parallel trainer uses, step after step: even, fixed weights, or auto (even while it
// measures, then fixed). Sized at construction; after_step allocates nothing.
class RankShares {
 public:
  // `option`: --rank_batch_shares ("" for model averaging, where each rank trains its own batch). Throws
  // dtnn::Error when the weights are not one per rank.
  RankShares(const std::string& option, int ranks, int rank);
  // This rank's [offset, offset + count) of a batch of n samples over the job's ranks.
  void split(int64_t n, int64_t* offset, int64_t* count) const;
  // Auto, while measuring: after every training step, this rank's busy seconds and samples of the step.
  // After the warm-up and kAutoSteps more steps, the ranks' seconds per sample are summed over `comm`
  // (collective: every rank reaches it at the same step, as data-parallel steps are synchronous) and the
  // weights fixed from them (the even split stays if a rank measured no time). True at the step that
  // decided. Allocates nothing: the weights fill the capacity reserved at construction.
  bool after_step(Communicator& comm, double busy_s, int64_t samples);
  bool measuring() const { return automatic_ && !decided_; }
  bool uneven() const { return !weights_.empty(); }
  const std::vector<double>& weights() const { return weights_; }  // normalised to sum 1; empty: even
  // "384,128": every rank's count of a batch of n samples, as split() divides it (for reports: allocates).
  std::string format(int64_t n) const;
  // "even", "weights", "auto"
  const char* mode() const { return automatic_ ? "auto" : weights_.empty() ? "even" : "weights"; }

 private:
  int ranks_, rank_;
  bool automatic_ = false, decided_ = false;
  std::vector<double> weights_;  // normalised (counts_into takes them so); empty: even
  int steps_seen_ = 0;
  double busy_s_ = 0.0;
  int64_t samples_ = 0;
  std::vector<float> rates_;  // one slot per rank, summed over the ranks
  // split()'s scratch, sized at construction (split runs for every batch: it must not allocate)
  mutable std::vector<int64_t> counts_;
  mutable std::vector<double> frac_;
  mutable std::vector<size_t> order_;
};

}  // namespace dtnn
