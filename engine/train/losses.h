// Losses and metrics. Each returns a SUM over the n samples of a per-sample value, so values from
// batches and ranks of different sizes add up exactly; divide by the total count for the mean.
//
// Losses (per sample, p = model output, y = one-hot or soft targets over k classes):
//   categorical_cross_entropy  -sum_j y_j log p_j. When the model ends in Softmax it is computed from the
//                              logits z (log-sum-exp, no clipping) and its gradient w.r.t. z is
//                              (p - y) / global_batch  (fused: Softmax's backward is skipped).
//                              Otherwise p is clipped to [1e-7, 1 - 1e-7].
//   binary_cross_entropy       -sum_j [y_j log p_j + (1 - y_j) log(1 - p_j)], p clipped to [1e-7, 1 - 1e-7]
// The gradient from outputs is the clipped loss's: 0 where p was clipped (engine/TRAINING.md, "Semantics, and
// PyDTNN's bugs fixed").
// Gradients are divided by the GLOBAL batch size (all ranks), so summing them over ranks gives the mean.
//
// Metrics (per sample; t = argmax y):
//   categorical_accuracy  100 if argmax p == t else 0 (percent, as PyDTNN prints it)
//   categorical_mse       (1 - p_t)^2            categorical_mae  |1 - p_t|
//   categorical_hinge     max(0, max_{j != t} p_j - p_t + 1)
//   regression_mse        mean_j (y_j - p_j)^2   regression_mae   mean_j |y_j - p_j|
// (PyDTNN's categorical_mae and regression_mae were batch sums rather than means: fixed here.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

enum class LossKind { categorical_cross_entropy, binary_cross_entropy };
enum class MetricKind { categorical_accuracy, categorical_mse, categorical_mae, categorical_hinge, regression_mse,
                        regression_mae };

LossKind parse_loss(const std::string& name);                    // throws dtnn::Error
std::vector<MetricKind> parse_metrics(const std::string& list);  // comma-separated; throws dtnn::Error
const char* loss_name(LossKind kind);
const char* metric_name(MetricKind kind);
const char* loss_short_name(LossKind kind);      // "cce", "bce"
const char* metric_short_name(MetricKind kind);  // "acc", "mse", "mae", "hin"
std::string format_metric(MetricKind kind, double mean);  // "acc: 91.25%", "mse: 0.0123456"

// Fused softmax + categorical cross entropy from logits z (n x k).
double cce_from_logits(const float* z, const float* y, int64_t n, int64_t k, double global_batch, float* dz);
// Loss from the model output p (n x k); writes dL/dp scaled by 1/global_batch.
double loss_from_output(LossKind kind, const float* p, const float* y, int64_t n, int64_t k, double global_batch,
                        float* dp);
// Loss value only (evaluation); `logits` may be null, in which case p is used.
double loss_value(LossKind kind, const float* logits, const float* p, const float* y, int64_t n, int64_t k);
double metric_sum(MetricKind kind, const float* p, const float* y, int64_t n, int64_t k);

}  // namespace dtnn
