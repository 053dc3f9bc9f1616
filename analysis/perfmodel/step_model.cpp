#include "analysis/perfmodel/step_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <set>

#include "core/error.h"

namespace dtnn::perf {

namespace {

// A rank's compute seconds in one step: every measured term, times the contention slowdown and the samples' share.
double rank_compute(const StepProfile& profile, double slowdown, double scale, double update_s) {
  double compute = slowdown * profile.other_s + scale * profile.loss_s + update_s;
  for (const ProfileLayer& l : profile.layers) compute += scale * (l.forward_s + l.backward_s);
  return compute;
}

}  // namespace

StepPrediction predict_step(const StepProfile& profile, const Platform& platform, int ranks,
                            const StepOptions& options) {
  DTNN_CHECK(ranks >= 1, "ranks must be >= 1 (got ", ranks, ")");
  DTNN_CHECK(options.mode == "blocking" || options.mode == "non_blocking",
             "--mode must be blocking or non_blocking (got '", options.mode, "')");
  const double batch = static_cast<double>(profile.batch_size);
  const double global = options.global_batch > 0 ? options.global_batch : batch;
  StepPrediction out;
  out.ranks = ranks;
  // Strong scaling: the largest share of B over p ranks (the trainer spreads the remainder one sample each).
  DTNN_CHECK(!options.strong || global >= ranks, "strong scaling: a global batch of ", global, " over ", ranks,
             " ranks leaves some rank no sample (dtnn train refuses a global batch smaller than the rank count)");
  out.samples_per_rank = options.strong ? std::ceil(global / ranks) : batch;
  // Every compute term is the profile's, times the samples' share and the node's contention (step_model.h).
  const double slowdown = contention_slowdown(options.ceiling, std::min(ranks, platform.ranks_per_node));
  const double scale = slowdown * out.samples_per_rank / batch;
  const AllreduceAlgorithm* forced = options.algorithm ? &*options.algorithm : nullptr;

  double t = slowdown * profile.other_s + scale * profile.loss_s;
  for (const ProfileLayer& l : profile.layers) t += scale * l.forward_s;
  const double update_s = slowdown * static_cast<double>(profile.total_floats) * profile.update_s_per_float;
  const double compute = rank_compute(profile, slowdown, scale, update_s);
  // The slowest rank ends its backward pass this much after the mean rank (step_model.h).
  const double sync_wait = ranks > 1 ? options.step_jitter * compute * expected_max_normal(ranks) : 0.0;
  std::set<std::string> algorithms;

  const bool overlapped = ranks > 1 && options.mode == "non_blocking" && !profile.buckets.empty();
  if (!overlapped) {
    for (size_t i = profile.layers.size(); i-- > 1;) t += scale * profile.layers[i].backward_s;
    t += sync_wait;
    out.backward_end_s = t;
    if (ranks > 1 && profile.total_floats > 0) {
      const double bytes = 4.0 * static_cast<double>(profile.total_floats);
      const CollectiveCost c = blocking_allreduce(platform, ranks, bytes, options.rules, forced);
      out.events.push_back({0, bytes, c.algorithm, t, t, t + c.seconds, t + c.seconds});
      algorithms.insert(algorithm_name(c.algorithm));
      t += c.seconds;
      out.comm_s = c.seconds;
    }
    t += update_s;
  } else {
    const size_t nb = profile.buckets.size();
    size_t next = 0;
    double channel_free = 0.0;
    out.events.resize(nb);
    const auto start = [&](double when) {
      const ProfileBucket& b = profile.buckets[next];
      BucketEvent& e = out.events[next];
      e.bucket = next;
      e.bytes = 4.0 * static_cast<double>(b.floats);
      const CollectiveCost c = nonblocking_allreduce(platform, ranks, e.bytes, options.rules, forced);
      e.algorithm = c.algorithm;
      algorithms.insert(algorithm_name(c.algorithm));
      e.start_s = when;
      e.begin_s = std::max(when, channel_free);
      e.end_s = e.begin_s + c.seconds;
      channel_free = e.end_s;
      out.comm_s += c.seconds;
      ++next;
    };
    for (size_t i = profile.layers.size(); i-- > 1;) {
      t += scale * profile.layers[i].backward_s;
      while (next < nb && i <= profile.buckets[next].ready_after) start(t);
    }
    t += sync_wait;
    out.backward_end_s = t;
    while (next < nb) start(t);
    for (size_t b = 0; b < nb; ++b) {
      t = std::max(t, out.events[b].end_s);
      out.events[b].waited_until_s = t;
      t += slowdown * static_cast<double>(profile.buckets[b].floats) * profile.update_s_per_float;
    }
  }
  out.step_s = t;
  out.compute_s = compute;
  out.exposed_s = std::max(0.0, out.step_s - compute);
  out.samples_per_s = out.step_s > 0 ? (options.strong ? global : ranks * batch) / out.step_s : 0.0;
  for (const std::string& a : algorithms) out.algorithms += (out.algorithms.empty() ? "" : "+") + a;
  return out;
}

double expected_max_normal(int n) {
  DTNN_CHECK(n >= 1, "expected_max_normal: n must be >= 1 (got ", n, ")");
  if (n == 1) return 0.0;
  // Simpson's rule over [-12, 12] (the density beyond is below 1e-30 for any n a cluster has).
  const int steps = 4800;
  const double a = -12.0, h = 24.0 / steps;
  double sum = 0.0;
  for (int i = 0; i <= steps; ++i) {
    const double x = a + i * h;
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double f = x * n * pdf * std::pow(cdf, n - 1);
    sum += (i == 0 || i == steps ? 1.0 : (i % 2 ? 4.0 : 2.0)) * f;
  }
  return sum * h / 3.0;
}

double contention_slowdown(const std::map<int, double>& ceiling, int n) {
  if (n <= 1 || ceiling.empty()) return 1.0;
  for (const auto& [count, c] : ceiling)
    DTNN_CHECK(count >= 2 && c > 0 && c <= count * 1.05, "--ceiling: ", count, " copies at ", c,
               "x one is not a contention ceiling (it lies in (0, ", count, "])");
  const auto hi = ceiling.lower_bound(n);
  double c;
  if (hi == ceiling.end()) {  // beyond the largest count measured: its share per rank
    c = std::prev(hi)->second / std::prev(hi)->first * n;
  } else if (hi->first == n || hi == ceiling.begin()) {
    // exact, or below the smallest count measured: between one rank (C(1) = 1) and it
    const double c_hi = hi->first == n ? hi->second : 1.0 + (hi->second - 1.0) * (n - 1) / (hi->first - 1);
    c = c_hi;
  } else {
    const auto lo = std::prev(hi);
    c = lo->second + (hi->second - lo->second) * (n - lo->first) / (hi->first - lo->first);
  }
  return std::max(1.0, n / c);  // a ceiling above n is noise: no rank computes faster beside others
}

std::map<int, double> parse_ceiling(const std::string& text) {
  std::map<int, double> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    const size_t colon = part.find(':');
    char* stop = nullptr;
    const long n = colon == std::string::npos ? 0 : std::strtol(part.c_str(), &stop, 10);
    const bool n_ok = colon != std::string::npos && stop == part.c_str() + colon && n >= 2 && n <= 1 << 20;
    const double c = n_ok ? std::strtod(part.c_str() + colon + 1, &stop) : 0.0;
    DTNN_CHECK(n_ok && stop == part.c_str() + part.size() && std::isfinite(c) && c > 0 && c <= n * 1.05,
               "--ceiling: '", part, "' is not RANKS:CEILING with RANKS >= 2 and 0 < CEILING <= RANKS (e.g. 2:1.91)");
    out[static_cast<int>(n)] = c;
    at = end + 1;
  }
  DTNN_CHECK(!out.empty(), "--ceiling: expected RANKS:CEILING pairs, e.g. 2:1.91,4:3.5");
  return out;
}

std::vector<StepPrediction> predict_scaling(const StepProfile& profile, const Platform& platform,
                                            const std::vector<int>& ranks, const StepOptions& options) {
  DTNN_CHECK(!ranks.empty(), "--ranks: give at least one rank count");
  const StepPrediction one = predict_step(profile, platform, 1, options);
  std::vector<StepPrediction> out;
  for (int p : ranks) {
    StepPrediction s = predict_step(profile, platform, p, options);
    s.efficiency = s.step_s > 0 ? (options.strong ? one.step_s / (p * s.step_s) : one.step_s / s.step_s) : 0.0;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dtnn::perf
