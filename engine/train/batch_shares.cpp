// Per-rank shares of the global batch. See batch_shares.h.
#include "train/batch_shares.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "core/fnv1a.h"
#include "parallel/communicator.h"

namespace dtnn {

namespace {

// Every rank's count of n samples into counts[0, p), from weights normalised to sum 1 (normalised() below:
// the counts are then a function of those doubles alone, which is what shares_fingerprint hashes): the
// floor of n x weight, the remainder to the largest fractional parts (ties to the lower rank); then, when
// n >= ranks, a rank left with none takes one from the largest. frac and order are scratch of p entries:
// nothing allocates (std::sort sorts in place).
void counts_into(int64_t n, const double* weights, size_t p, int64_t* counts, double* frac, size_t* order) {
  int64_t given = 0;
  for (size_t r = 0; r < p; ++r) {
    const double exact = static_cast<double>(n) * weights[r];
    counts[r] = std::min<int64_t>(n, static_cast<int64_t>(std::floor(exact)));
    frac[r] = exact - static_cast<double>(counts[r]);
    order[r] = r;
    given += counts[r];
  }
  std::sort(order, order + p, [frac](size_t a, size_t b) { return frac[a] > frac[b] || (frac[a] == frac[b] && a < b); });
  for (size_t i = 0; given < n; i = (i + 1) % p, ++given) ++counts[order[i]];
  int64_t* const end = counts + p;
  while (given > n) {  // rounding never overshoots, but be safe: take from the largest
    --*std::max_element(counts, end);
    --given;
  }
  if (n >= static_cast<int64_t>(p))
    for (size_t r = 0; r < p; ++r)
      if (counts[r] == 0) {
        --*std::max_element(counts, end);
        counts[r] = 1;
      }
}

// The weights divided by their sum: "3,1" and "0.75,0.25" both give 0.75, 0.25 exactly.
std::vector<double> normalised(const std::vector<double>& weights) {
  double total = 0.0;
  for (const double w : weights) total += w;
  std::vector<double> out(weights);
  for (double& w : out) w /= total;
  return out;
}

}  // namespace

BatchShares parse_batch_shares(const std::string& text) {
  BatchShares s;
  if (text.empty()) return s;
  if (text == "auto") {
    s.automatic = true;
    return s;
  }
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    char* end = nullptr;
    const bool numeral = !item.empty() && (std::isdigit(static_cast<unsigned char>(item[0])) || item[0] == '.');
    const double w = numeral ? std::strtod(item.c_str(), &end) : 0.0;
    DTNN_CHECK(numeral && end == item.c_str() + item.size() && std::isfinite(w) && w > 0 && w <= 1e6,
               "expected 'auto' or one positive weight per rank separated by commas (e.g. 3,1), got '", text, "'");
    s.weights.push_back(w);
    begin = comma + 1;
  }
  DTNN_CHECK(s.weights.size() <= (size_t{1} << 20), "more than 2^20 weights in '", text.substr(0, 40), "...'");
  return s;
}

void split_batch(int64_t n, const std::vector<double>& weights, int ranks, int rank, int64_t* offset,
                 int64_t* count) {
  if (weights.empty()) {
    const int64_t base = n / ranks, extra = n % ranks;
    *count = base + (rank < extra ? 1 : 0);
    *offset = rank * base + std::min<int64_t>(rank, extra);
    return;
  }
  DTNN_ASSERT(static_cast<int>(weights.size()) == ranks);
  const std::vector<double> w = normalised(weights);
  std::vector<int64_t> counts(w.size());
  std::vector<double> frac(w.size());
  std::vector<size_t> order(w.size());
  counts_into(n, w.data(), w.size(), counts.data(), frac.data(), order.data());
  *offset = std::accumulate(counts.begin(), counts.begin() + rank, int64_t{0});
  *count = counts[rank];
}

int64_t largest_rank_batch(int64_t global, const BatchShares& shares, int ranks, int rank) {
  if (shares.automatic) return global;
  if (shares.weights.empty()) return (global + ranks - 1) / ranks;  // even: ceil, at the full batch
  // Not the count at the full batch plus one: there, ranks whose share is under one sample take theirs
  // from the largest, which a shorter batch (fewer samples than ranks) does not do. A count is at most
  // floor(n x weight) + 1 before that correction, and the correction only lowers the largest or raises a
  // zero to one, so floor(global x weight) + 1 bounds every n <= global.
  const double share = normalised(shares.weights)[static_cast<size_t>(rank)];
  const int64_t bound = static_cast<int64_t>(std::floor(static_cast<double>(global) * share)) + 1;
  return std::max<int64_t>(1, std::min<int64_t>(global, bound));
}

std::vector<double> weights_from_rates(const std::vector<double>& seconds_per_sample) {
  std::vector<double> w(seconds_per_sample.size());
  double total = 0;
  for (size_t r = 0; r < w.size(); ++r) {
    w[r] = 1.0 / std::max(seconds_per_sample[r], 1e-12);
    total += w[r];
  }
  for (double& x : w) x /= total;
  return w;
}

uint64_t shares_fingerprint(const std::string& option, int ranks) {
  const BatchShares s = parse_batch_shares(option);
  if (s.automatic) return 1;
  if (s.weights.empty() || ranks == 1) return 0;
  // FNV-1a of the normalised weights' bits: every split is a function of them (counts_into), so equal
  // fingerprints mean equal splits of every batch, the short last ones included ("3,1" and "2.9,1" split
  // 64 alike but 10 as 8 + 2 and 7 + 3).
  const std::vector<double> weights = normalised(s.weights);
  return 2 + (fnv1a(weights.data(), weights.size() * sizeof(double)) >> 2);
}

std::string format_split(int64_t n, const std::vector<double>& weights, int ranks) {
  std::string out;
  for (int r = 0; r < ranks; ++r) {
    int64_t offset = 0, count = 0;
    split_batch(n, weights, ranks, r, &offset, &count);
    out += (r ? "," : "") + std::to_string(count);
  }
  return out;
}

SlowRank parse_slow_rank(const std::string& text) {
  SlowRank s;
  if (text.empty()) return s;
  const size_t colon = text.find(':');
  char* end = nullptr;
  const long rank = colon == std::string::npos || colon == 0 ? -1 : std::strtol(text.c_str(), &end, 10);
  const bool rank_ok = rank >= 0 && rank < (1L << 24) && end == text.c_str() + colon;
  const double factor = rank_ok ? std::strtod(text.c_str() + colon + 1, &end) : 0.0;
  DTNN_CHECK(rank_ok && colon + 1 < text.size() && end == text.c_str() + text.size() && std::isfinite(factor) &&
                 factor >= 1.0 && factor <= 1000.0,
             "expected RANK:FACTOR (e.g. 1:3; rank >= 0, factor from 1 to 1000), got '", text, "'");
  s.rank = static_cast<int>(rank);
  s.factor = factor;
  return s;
}

RankShares::RankShares(const std::string& option, int ranks, int rank) : ranks_(ranks), rank_(rank) {
  const BatchShares s = parse_batch_shares(option);
  automatic_ = s.automatic && ranks > 1;
  DTNN_CHECK(s.weights.empty() || static_cast<int>(s.weights.size()) == ranks, "--rank_batch_shares=", option,
             ": ", s.weights.size(), " weight", s.weights.size() == 1 ? "" : "s", " for ", ranks, " rank",
             ranks == 1 ? "" : "s", " (one per rank)");
  const size_t p = static_cast<size_t>(ranks);
  weights_.reserve(p);  // auto fills it in place when it decides
  if (ranks > 1 && !s.weights.empty()) weights_ = normalised(s.weights);  // counts_into takes them so
  rates_.assign(p, 0.0f);
  counts_.assign(p, 0);
  frac_.assign(p, 0.0);
  order_.assign(p, 0);
}

void RankShares::split(int64_t n, int64_t* offset, int64_t* count) const {
  if (weights_.empty()) return split_batch(n, weights_, ranks_, rank_, offset, count);  // even: no scratch
  counts_into(n, weights_.data(), weights_.size(), counts_.data(), frac_.data(), order_.data());
  *offset = 0;
  for (int r = 0; r < rank_; ++r) *offset += counts_[static_cast<size_t>(r)];
  *count = counts_[static_cast<size_t>(rank_)];
}

std::string RankShares::format(int64_t n) const {
  if (weights_.empty()) return format_split(n, weights_, ranks_);  // even
  counts_into(n, weights_.data(), weights_.size(), counts_.data(), frac_.data(), order_.data());
  std::string out;
  for (size_t r = 0; r < counts_.size(); ++r) out += (r ? "," : "") + std::to_string(counts_[r]);
  return out;
}

bool RankShares::after_step(Communicator& comm, double busy_s, int64_t samples) {
  if (!measuring()) return false;
  if (++steps_seen_ == 1) return false;  // the warm-up step: first-touch pages, cold caches, cuDNN's search
  busy_s_ += busy_s;
  samples_ += samples;
  if (steps_seen_ < 1 + kAutoSteps) return false;
  rates_.assign(rates_.size(), 0.0f);
  rates_[static_cast<size_t>(rank_)] = static_cast<float>(busy_s_ / static_cast<double>(std::max<int64_t>(samples_, 1)));
  comm.allreduce_sum(rates_.data(), static_cast<int64_t>(rates_.size()));
  decided_ = true;
  // A rank that measured nothing (no compute counted) would get every sample: keep the even split then.
  for (const float r : rates_)
    if (!(r > 0.0f)) return true;
  weights_.resize(rates_.size());  // within the capacity reserved at construction
  double total = 0.0;
  for (size_t r = 0; r < rates_.size(); ++r) total += weights_[r] = 1.0 / static_cast<double>(rates_[r]);
  for (double& w : weights_) w /= total;
  return true;
}

}  // namespace dtnn
