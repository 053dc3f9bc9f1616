#include "analysis/perfmodel/step_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace dtnn::perf {

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
  const double scale = out.samples_per_rank / batch;
  const AllreduceAlgorithm* forced = options.algorithm ? &*options.algorithm : nullptr;

  double t = profile.other_s + scale * profile.loss_s;
  for (const ProfileLayer& l : profile.layers) t += scale * l.forward_s;
  const double update_s = static_cast<double>(profile.total_floats) * profile.update_s_per_float;
  std::set<std::string> algorithms;

  const bool overlapped = ranks > 1 && options.mode == "non_blocking" && !profile.buckets.empty();
  if (!overlapped) {
    for (size_t i = profile.layers.size(); i-- > 1;) t += scale * profile.layers[i].backward_s;
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
    out.backward_end_s = t;
    while (next < nb) start(t);
    for (size_t b = 0; b < nb; ++b) {
      t = std::max(t, out.events[b].end_s);
      out.events[b].waited_until_s = t;
      t += static_cast<double>(profile.buckets[b].floats) * profile.update_s_per_float;
    }
  }
  out.step_s = t;
  double compute = profile.other_s + scale * profile.loss_s + update_s;
  for (const ProfileLayer& l : profile.layers) compute += scale * (l.forward_s + l.backward_s);
  out.compute_s = compute;
  out.exposed_s = std::max(0.0, out.step_s - compute);
  out.samples_per_s = out.step_s > 0 ? (options.strong ? global : ranks * batch) / out.step_s : 0.0;
  for (const std::string& a : algorithms) out.algorithms += (out.algorithms.empty() ? "" : "+") + a;
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
