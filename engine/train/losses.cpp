#include "train/losses.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace dtnn {
namespace {

constexpr double kClip = 1e-7;

int64_t argmax(const float* v, int64_t k) {
  int64_t best = 0;
  for (int64_t j = 1; j < k; ++j)
    if (v[j] > v[best]) best = j;
  return best;
}

double clip(double p) { return std::min(std::max(p, kClip), 1.0 - kClip); }

}  // namespace

LossKind parse_loss(const std::string& name) {
  if (name == "categorical_cross_entropy") return LossKind::categorical_cross_entropy;
  if (name == "binary_cross_entropy") return LossKind::binary_cross_entropy;
  fail("unknown loss function '", name, "' (known: categorical_cross_entropy, binary_cross_entropy)");
}

std::vector<MetricKind> parse_metrics(const std::string& list) {
  static const MetricKind all[] = {MetricKind::categorical_accuracy, MetricKind::categorical_mse,
                                   MetricKind::categorical_mae,      MetricKind::categorical_hinge,
                                   MetricKind::regression_mse,       MetricKind::regression_mae};
  std::vector<MetricKind> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) continue;
    bool found = false;
    for (MetricKind m : all)
      if (name == metric_name(m)) { out.push_back(m); found = true; }
    DTNN_CHECK(found, "unknown metric '", name, "' (known: categorical_accuracy, categorical_mse, categorical_mae, ",
               "categorical_hinge, regression_mse, regression_mae)");
  }
  return out;
}

const char* loss_name(LossKind kind) {
  return kind == LossKind::categorical_cross_entropy ? "categorical_cross_entropy" : "binary_cross_entropy";
}
const char* loss_short_name(LossKind kind) { return kind == LossKind::categorical_cross_entropy ? "cce" : "bce"; }

const char* metric_name(MetricKind kind) {
  switch (kind) {
    case MetricKind::categorical_accuracy: return "categorical_accuracy";
    case MetricKind::categorical_mse: return "categorical_mse";
    case MetricKind::categorical_mae: return "categorical_mae";
    case MetricKind::categorical_hinge: return "categorical_hinge";
    case MetricKind::regression_mse: return "regression_mse";
    case MetricKind::regression_mae: return "regression_mae";
  }
  return "?";
}

const char* metric_short_name(MetricKind kind) {
  switch (kind) {
    case MetricKind::categorical_accuracy: return "acc";
    case MetricKind::categorical_mse:
    case MetricKind::regression_mse: return "mse";
    case MetricKind::categorical_mae:
    case MetricKind::regression_mae: return "mae";
    case MetricKind::categorical_hinge: return "hin";
  }
  return "?";
}

std::string format_metric(MetricKind kind, double mean) {
  char buf[64];
  if (kind == MetricKind::categorical_accuracy)
    std::snprintf(buf, sizeof buf, "acc: %5.2f%%", mean);
  else
    std::snprintf(buf, sizeof buf, "%s: %.7f", metric_short_name(kind), mean);
  return buf;
}

double cce_from_logits(const float* z, const float* y, int64_t n, int64_t k, double global_batch, float* dz) {
  double total = 0.0;
  const double inv = 1.0 / global_batch;
  for (int64_t b = 0; b < n; ++b) {
    const float* zb = z + b * k;
    const float* yb = y + b * k;
    double m = zb[0];
    for (int64_t j = 1; j < k; ++j) m = std::max(m, static_cast<double>(zb[j]));
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(zb[j] - m);
    const double lse = m + std::log(sum);
    double ysum = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      total += yb[j] * (lse - zb[j]);
      ysum += yb[j];
    }
    if (dz)  // d/dz_j of -sum y log softmax(z) = softmax_j * sum(y) - y_j
      for (int64_t j = 0; j < k; ++j)
        dz[b * k + j] = static_cast<float>((std::exp(zb[j] - lse) * ysum - yb[j]) * inv);
  }
  return total;
}

double loss_from_output(LossKind kind, const float* p, const float* y, int64_t n, int64_t k, double global_batch,
                        float* dp) {
  double total = 0.0;
  const double inv = 1.0 / global_batch;
  for (int64_t i = 0; i < n * k; ++i) {
    const double pc = clip(p[i]);
    const bool clipped = pc != p[i];
    if (kind == LossKind::categorical_cross_entropy) {
      total -= y[i] * std::log(pc);
      if (dp) dp[i] = clipped ? 0.0f : static_cast<float>(-y[i] / pc * inv);
    } else {
      total -= y[i] * std::log(pc) + (1.0 - y[i]) * std::log(1.0 - pc);
      if (dp) dp[i] = clipped ? 0.0f : static_cast<float>((-y[i] / pc + (1.0 - y[i]) / (1.0 - pc)) * inv);
    }
  }
  return total;
}

double loss_value(LossKind kind, const float* logits, const float* p, const float* y, int64_t n, int64_t k) {
  if (logits && kind == LossKind::categorical_cross_entropy) return cce_from_logits(logits, y, n, k, 1.0, nullptr);
  return loss_from_output(kind, p, y, n, k, 1.0, nullptr);
}

double metric_sum(MetricKind kind, const float* p, const float* y, int64_t n, int64_t k) {
  double total = 0.0;
  for (int64_t b = 0; b < n; ++b) {
    const float* pb = p + b * k;
    const float* yb = y + b * k;
    const int64_t t = argmax(yb, k);
    switch (kind) {
      case MetricKind::categorical_accuracy: total += argmax(pb, k) == t ? 100.0 : 0.0; break;
      case MetricKind::categorical_mse: total += (1.0 - pb[t]) * (1.0 - pb[t]); break;
      case MetricKind::categorical_mae: total += std::fabs(1.0 - pb[t]); break;
      case MetricKind::categorical_hinge: {
        double other = -1e30;
        for (int64_t j = 0; j < k; ++j)
          if (j != t) other = std::max(other, static_cast<double>(pb[j]));
        total += std::max(0.0, other - pb[t] + 1.0);
        break;
      }
      case MetricKind::regression_mse:
      case MetricKind::regression_mae: {
        double s = 0.0;
        for (int64_t j = 0; j < k; ++j) {
          const double d = yb[j] - pb[j];
          s += kind == MetricKind::regression_mse ? d * d : std::fabs(d);
        }
        total += s / static_cast<double>(k);
        break;
      }
    }
  }
  return total;
}

}  // namespace dtnn
