// Per-rank shares of the global batch (train/batch_shares.h): the parser's refusals, the split against
// hand-computed largest-remainder splits, and properties checked exhaustively over small cases: the counts
// partition the batch in rank order, follow the weights within one sample, give every rank one sample
// when there are enough, and never exceed the buffers largest_rank_batch sizes; the fingerprint ranks
// compare tells apart weights that split any batch differently; a trainer's split allocates nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "parallel/communicator.h"
#include "support/alloc_count.h"
#include "train/batch_shares.h"

using namespace dtnn;

namespace {
std::vector<int64_t> counts(int64_t n, const std::vector<double>& w, int ranks) {
  std::vector<int64_t> c;
  int64_t next = 0;
  for (int r = 0; r < ranks; ++r) {
    int64_t offset = -1, count = -1;
    split_batch(n, w, ranks, r, &offset, &count);
    CHECK(offset == next);  // rank r's samples follow rank r-1's
    next = offset + count;
    c.push_back(count);
  }
  CHECK(next == n);
  return c;
}
}  // namespace

TEST_CASE("batch shares: the option's forms and refusals", "[train]") {
  CHECK(parse_batch_shares("").weights.empty());
  CHECK_FALSE(parse_batch_shares("").automatic);
  CHECK(parse_batch_shares("auto").automatic);
  CHECK(parse_batch_shares("3,1").weights == std::vector<double>{3, 1});
  CHECK(parse_batch_shares("0.75,0.25,1e-2").weights == std::vector<double>{0.75, 0.25, 0.01});
  for (const char* bad : {"3,", ",1", "3,,1", "3;1", "0,1", "-1,2", "nan,1", "inf,1", "3,1x", "Auto", " 3,1", "1e7,1"})
    CHECK_THROWS_AS(parse_batch_shares(bad), Error);
  CHECK(parse_slow_rank("").factor == 1.0);
  CHECK(parse_slow_rank("1:3").rank == 1);
  CHECK(parse_slow_rank("1:2.5").factor == 2.5);
  for (const char* bad : {"1", ":3", "1:", "1:0.5", "-1:2", "a:2", "1:2x", "1:inf", "1:1001"})
    CHECK_THROWS_AS(parse_slow_rank(bad), Error);
}

TEST_CASE("batch shares: splits by hand", "[train]") {
  CHECK(counts(512, {3, 1}, 2) == std::vector<int64_t>{384, 128});
  CHECK(counts(64, {}, 2) == std::vector<int64_t>{32, 32});
  CHECK(counts(165, {}, 2) == std::vector<int64_t>{83, 82});
  // 165 x 3/4 = 123.75 and 41.25: floors 123 + 41, the one left to the larger fraction (rank 0)
  CHECK(counts(165, {3, 1}, 2) == std::vector<int64_t>{124, 41});
  // 10 x (1/3 each) = 3.33: floors 3 + 3 + 3, the one left to the lowest rank on the tie
  CHECK(counts(10, {1, 1, 1}, 3) == std::vector<int64_t>{4, 3, 3});
  // 5 x (0.98, 0.01, 0.01): 4.9 + 0.05 + 0.05 -> 5, 0, 0; then one each for ranks 1 and 2 from the largest
  CHECK(counts(5, {0.98, 0.01, 0.01}, 3) == std::vector<int64_t>{3, 1, 1});
  CHECK(counts(2, {0.98, 0.01, 0.01}, 3) == std::vector<int64_t>{2, 0, 0});  // fewer samples than ranks
  CHECK(format_split(512, {3, 1}, 2) == "384,128");
  CHECK(format_split(512, {}, 2) == "256,256");
}

TEST_CASE("batch shares: every split partitions, is proportional within one and fits its buffers", "[train]") {
  const std::vector<std::vector<double>> weights = {{3, 1}, {1, 1}, {1, 2, 7}, {0.1, 5, 5, 0.1}, {1, 1, 1, 1, 1},
                                                   // the full batch takes starved ranks' one sample each
                                                   // from rank 0, a batch under `ranks` samples does not
                                                   {100, 1, 1, 1}, {0.98, 0.01, 0.01}, {}};
  for (const auto& w : weights) {
    const int ranks = w.empty() ? 3 : static_cast<int>(w.size());
    double total = 0;
    for (double x : w) total += x;
    const std::vector<double> shares_of = w.empty() ? std::vector<double>(3, 1.0) : w;
    if (w.empty()) total = 3;
    for (int64_t global : {int64_t{3}, int64_t{4}, int64_t{5}, int64_t{17}, int64_t{64}, int64_t{256}}) {
      BatchShares shares;
      shares.weights = w;
      for (int64_t n = 0; n <= global; ++n) {
        const std::vector<int64_t> c = counts(n, w, ranks);
        // Ranks whose share is under one sample get one when n >= ranks, taken from the largest counts.
        int starved = 0;
        for (int r = 0; r < ranks; ++r) starved += n >= ranks && static_cast<double>(n) * shares_of[r] / total < 1.0;
        for (int r = 0; r < ranks; ++r) {
          INFO("weights " << w.size() << " global " << global << " n " << n << " rank " << r);
          if (n >= ranks) CHECK(c[r] >= 1);
          CHECK(std::fabs(static_cast<double>(c[r]) - static_cast<double>(n) * shares_of[r] / total) < 1.0 + starved);
          CHECK(c[r] <= largest_rank_batch(global, shares, ranks, r));
        }
      }
    }
  }
  BatchShares even;
  CHECK(largest_rank_batch(128, even, 2, 1) == 64);  // even shares need no more than before
  CHECK(largest_rank_batch(129, even, 2, 1) == 65);
  BatchShares automatic;
  automatic.automatic = true;
  CHECK(largest_rank_batch(512, automatic, 2, 1) == 512);
  BatchShares skewed;  // at 4 the split is 1,1,1,1; a short batch of 3 gives rank 0 all 3
  skewed.weights = {100, 1, 1, 1};
  CHECK(counts(4, skewed.weights, 4) == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(counts(3, skewed.weights, 4) == std::vector<int64_t>{3, 0, 0, 0});
  CHECK(largest_rank_batch(4, skewed, 4, 0) == 4);
  CHECK(largest_rank_batch(4, skewed, 4, 1) == 1);
}

TEST_CASE("batch shares: auto weights are the inverse seconds per sample", "[train]") {
  const std::vector<double> w = weights_from_rates({0.001, 0.003});
  CHECK(w[0] == Approx(0.75));
  CHECK(w[1] == Approx(0.25));
  CHECK(format_split(512, w, 2) == "384,128");
  RankShares even("", 2, 0);
  CHECK(std::string(even.mode()) == "even");
  CHECK_FALSE(even.uneven());
  RankShares fixed("3,1", 2, 1);
  int64_t offset = 0, count = 0;
  fixed.split(512, &offset, &count);
  CHECK(offset == 384);
  CHECK(count == 128);
  CHECK_THROWS_AS(RankShares("3,1,1", 2, 0), Error);
  RankShares one("auto", 1, 0);  // one rank: nothing to measure
  CHECK_FALSE(one.measuring());
}

TEST_CASE("batch shares: the fingerprint ranks compare", "[train]") {
  CHECK(shares_fingerprint("", 2) == 0);
  CHECK(shares_fingerprint("3,1", 1) == 0);  // one rank: nothing to split
  CHECK(shares_fingerprint("auto", 2) == 1);
  CHECK(shares_fingerprint("3,1", 2) == shares_fingerprint("0.75,0.25", 2));
  CHECK(shares_fingerprint("3,1", 2) == shares_fingerprint("6,2", 2));
  CHECK(shares_fingerprint("3,1", 2) != shares_fingerprint("1,3", 2));
  CHECK(shares_fingerprint("3,1", 2) != shares_fingerprint("", 2));
  CHECK(shares_fingerprint("1,1", 2) >= 2);  // given weights, even or not, are not "no option"
  // A full batch of 64 splits alike (48, 16), a short one of 10 does not (8 + 2 vs 7 + 3): ranks given
  // these two would train sample 7 twice in the epoch's last batch.
  CHECK(format_split(64, {3, 1}, 2) == format_split(64, {2.9, 1}, 2));
  CHECK(format_split(10, {3, 1}, 2) != format_split(10, {2.9, 1}, 2));
  CHECK(shares_fingerprint("3,1", 2) != shares_fingerprint("2.9,1", 2));
}

TEST_CASE("batch shares: a trainer's split and auto's measuring steps allocate nothing", "[train]") {
  RankShares fixed("5,2,1", 3, 1);
  RankShares even("", 3, 2);
  RankShares measuring("auto", 2, 0);  // over one process: rank 1 measures nothing, so the even split stays
  const std::unique_ptr<Communicator> comm = make_local_communicator();
  int64_t offset = 0, count = 0, sum = 0;
  bool decided = false;
  const int64_t before = dtnn::test::allocations();
  for (int64_t n = 1; n <= 300; ++n) {
    fixed.split(n, &offset, &count);
    sum += count;
    even.split(n, &offset, &count);
    sum += offset;
    measuring.split(n, &offset, &count);
    decided = measuring.after_step(*comm, 0.01, count) || decided;
  }
  const int64_t allocated = dtnn::test::allocations() - before;
  CHECK(allocated == 0);
  CHECK(decided);
  CHECK(sum > 0);
  CHECK(fixed.format(8) == "5,2,1");  // the trainer's weights are normalised; they split as given
  const int64_t probe_before = dtnn::test::allocations();
  std::vector<int> probe(3);  // the counter counts: this vector's buffer is one allocation
  const int64_t probe_allocated = dtnn::test::allocations() - probe_before;
  CHECK(probe_allocated == 1);
  CHECK(probe.size() == 3);
}
