#include "parallel/gradient_reducer.h"

#include <algorithm>
#include <climits>

#include "core/bf16.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/median.h"

namespace dtnn {

std::vector<GradientBucket> plan_buckets(const std::vector<int64_t>& param_begin, int64_t tail, double bucket_mb,
                                         int64_t min_buckets, bool tail_alone) {
  DTNN_CHECK(bucket_mb >= 0, "--gradient_bucket_mb must be >= 0 (got ", bucket_mb, ")");
  DTNN_CHECK(min_buckets >= 1, "--gradient_buckets_min must be >= 1 (got ", min_buckets, ")");
  DTNN_ASSERT(!param_begin.empty());
  const size_t layers = param_begin.size() - 1;
  const int64_t slab = param_begin.back();
  const auto floats_of = [](double mb) { return static_cast<int64_t>(mb * 1024.0 * 1024.0 / sizeof(float)); };
  const int64_t share = std::max<int64_t>(1, (slab - param_begin.front() + min_buckets - 1) / min_buckets);
  const int64_t cap = bucket_mb > 0 ? std::min(share, std::max<int64_t>(1, floats_of(bucket_mb))) : 0;
  const int64_t first_cap = cap > 0 ? std::min(cap, floats_of(1.0)) : 0;  // DDP's 1 MiB first bucket
  std::vector<GradientBucket> out;
  // Closes [begin, end) ready after `layer`, split where it would exceed INT_MAX floats (top part first:
  // reverse order, as the rest).
  const auto close = [&](int64_t begin, int64_t end, size_t layer) {
    while (end - begin > INT_MAX) {
      out.push_back({end - INT_MAX, end, layer});
      end -= INT_MAX;
    }
    out.push_back({begin, end, layer});
  };
  int64_t open_end = -1, open_begin = 0;  // the bucket being filled: [open_begin, open_end), -1 = none
  size_t open_layer = 0;
  for (size_t i = layers; i-- > 1;) {
    const int64_t b = param_begin[i], e = param_begin[i + 1];
    if (e == b) continue;
    if (open_end < 0) open_end = e;
    open_begin = b;
    open_layer = i;
    const int64_t limit = out.empty() ? first_cap : cap;
    if (open_end - open_begin >= limit) {
      close(open_begin, open_end, open_layer);
      open_end = -1;
    }
  }
  if (open_end >= 0) close(open_begin, open_end, open_layer);
  if (tail > 0) {
    if (out.empty()) out.push_back({slab, slab + tail, layers});  // no parameters: started at the first chance
    else if (!tail_alone && out.front().end == slab && slab + tail - out.front().begin <= INT_MAX)
      out.front().end = slab + tail;
    else out.insert(out.begin(), GradientBucket{slab, slab + tail, layers});
  }
  return out;
}

GradientReducer::GradientReducer(Communicator& comm, const Model& model, int64_t tail, bool non_blocking,
                                 double bucket_mb, int64_t min_buckets, bool bf16)
    : comm_(comm), grads_(model.grad_slab()), total_floats_(model.slab_size() + tail), slab_(model.slab_size()),
      reduce_(comm.size() > 1), overlapped_(non_blocking && comm.size() > 1), bf16_(bf16 && comm.size() > 1) {
  std::vector<int64_t> begins(model.num_layers() + 1);
  for (size_t i = 0; i <= model.num_layers(); ++i) begins[i] = model.param_begin(i);
  buckets_ = plan_buckets(begins, tail, bucket_mb, min_buckets, bf16_);
  if (bf16_) wire_.assign(static_cast<size_t>(slab_), 0);
  int64_t covered = 0;
  for (const GradientBucket& b : buckets_) covered += b.end - b.begin;
  DTNN_ASSERT(covered == total_floats_ - begins.front());  // every float summed once (Input has no parameters)
  if (overlapped_) comm_.reserve_requests(static_cast<int>(buckets_.size()));
  started_at_.assign(buckets_.size(), 0.0);
  for (size_t i = 0; i < model.num_layers(); ++i) layer_ids_.push_back(static_cast<int32_t>(model.layer(i).id));
}

void GradientReducer::reset_times() {
  times_ = RankTimes{};
  steps_ = 0;
}

void GradientReducer::begin_step() {
  next_start_ = next_test_ = 0;
  comm_in_step_ = 0.0;
  step_t0_ = now_s();
}

bool GradientReducer::in_bf16(size_t b) const { return bf16_ && buckets_[b].begin < slab_; }

int64_t GradientReducer::bucket_bytes(size_t b) const {
  return (in_bf16(b) ? 2 : 4) * (buckets_[b].end - buckets_[b].begin);
}

void GradientReducer::start(size_t b) {
  if (tracer_) started_at_[b] = now_s();
  const int64_t begin = buckets_[b].begin, n = buckets_[b].end - begin;
  if (in_bf16(b)) {  // the tail rides alone (plan_buckets' tail_alone): a bucket is all gradients or all tail
    round_to_bf16(grads_ + begin, wire_.data() + begin, n);
    comm_.start_allreduce_sum_bf16(static_cast<int>(b), wire_.data() + begin, n);
  } else {
    comm_.start_allreduce_sum(static_cast<int>(b), grads_ + begin, n);
  }
}

void GradientReducer::allreduce_all() {
  if (!bf16_) {
    comm_.allreduce_sum(grads_, total_floats_);
    return;
  }
  round_to_bf16(grads_, wire_.data(), slab_);
  comm_.allreduce_sum_bf16(wire_.data(), slab_);
  widen_from_bf16(wire_.data(), grads_, slab_);
  if (total_floats_ > slab_) comm_.allreduce_sum(grads_ + slab_, total_floats_ - slab_);  // the loss and metric sums
}

void GradientReducer::completed(size_t b, double when) {
  if (tracer_)
    tracer_->add(TraceKind::in_flight, static_cast<int32_t>(b), started_at_[b], when,
                 bucket_bytes(b), static_cast<uint8_t>(1 + std::min<size_t>(b, 254)));
}

void GradientReducer::after_layer(size_t layer) {
  if (next_test_ == buckets_.size()) return;  // everything summed already
  const double t0 = now_s();
  const size_t started = next_start_, tested = next_test_;
  while (next_start_ < buckets_.size() && layer <= buckets_[next_start_].ready_after) start(next_start_++);
  // One test of the oldest outstanding request drives the progress engine for all of them.
  while (next_test_ < next_start_ && comm_.test_request(static_cast<int>(next_test_))) completed(next_test_++, now_s());
  const double t1 = now_s();
  comm_in_step_ += t1 - t0;
  if (tracer_ && (next_start_ != started || next_test_ != tested || next_test_ < next_start_))
    tracer_->add(TraceKind::comm_calls, layer_ids_[layer], t0, t1);  // the layer's id, as forward/backward
}

void GradientReducer::finish_step(Optimizer& optimizer, float* params) {
  const double backward_end = now_s();
  times_.compute_s += backward_end - step_t0_ - comm_in_step_;
  times_.comm_s += comm_in_step_;
  double exposed = 0.0, update = 0.0;
  optimizer.begin_step();
  if (!reduce_ || !overlapped_) {
    if (reduce_) {
      allreduce_all();
      exposed = now_s() - backward_end;
      if (tracer_) tracer_->add(TraceKind::allreduce, 0, backward_end, backward_end + exposed, wire_bytes());
    }
    const double t = now_s();
    optimizer.update_range(params, grads_, 0, optimizer.size());
    update = now_s() - t;
    if (tracer_) tracer_->add(TraceKind::update, 0, t, t + update);
  } else {
    while (next_start_ < buckets_.size()) start(next_start_++);
    exposed = now_s() - backward_end;
    if (tracer_ && exposed > 0) tracer_->add(TraceKind::comm_calls, 0, backward_end, backward_end + exposed);
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const double t = now_s();
      const bool pending = b >= next_test_;
      comm_.wait_request(static_cast<int>(b));
      if (in_bf16(b))
        widen_from_bf16(wire_.data() + buckets_[b].begin, grads_ + buckets_[b].begin, buckets_[b].end - buckets_[b].begin);
      const double t1 = now_s();
      exposed += t1 - t;
      if (pending) completed(b, t1);
      // The tail has no parameters to update; the slab ends at optimizer.size().
      const int64_t end = std::min(buckets_[b].end, optimizer.size());
      optimizer.update_range(params, grads_, std::min(buckets_[b].begin, end), end);
      const double t2 = now_s();
      update += t2 - t1;
      if (tracer_) {
        tracer_->add(TraceKind::wait, static_cast<int32_t>(b), t, t1, bucket_bytes(b));
        tracer_->add(TraceKind::update, static_cast<int32_t>(b), t1, t2);
      }
    }
  }
  times_.exposed_s += exposed;
  times_.comm_s += exposed;
  times_.compute_s += update;
  times_.step_s += now_s() - step_t0_;
  ++steps_;
}

EpochComm GradientReducer::gather_epoch_over(Communicator& comm) const {
  return gather_epoch_comm(comm, times_, steps_, !reduce_ ? "none" : overlapped_ ? "non_blocking" : "blocking",
                           !reduce_ ? 0 : overlapped_ ? static_cast<int64_t>(buckets_.size()) : 1,
                           reduce_ ? static_cast<double>(wire_bytes()) : 0.0);
}

int64_t GradientReducer::wire_bytes() const {
  return bf16_ ? 2 * slab_ + 4 * (total_floats_ - slab_) : 4 * total_floats_;
}

EpochComm gather_epoch_comm(Communicator& comm, const RankTimes& times, int64_t steps, const char* mode,
                            int64_t buckets_per_step, double bytes_per_step) {
  EpochComm e;
  e.steps = steps;
  e.mode = mode;
  e.buckets_per_step = buckets_per_step;
  e.bytes_per_step = bytes_per_step;
  constexpr int kFields = 4;
  const double mine[kFields] = {times.step_s, times.compute_s, times.comm_s, times.exposed_s};
  std::vector<double> all(static_cast<size_t>(kFields) * comm.size());
  comm.allgather(mine, kFields, all.data());
  double* fields[4][kFields] = {{&e.rank0.step_s, &e.rank0.compute_s, &e.rank0.comm_s, &e.rank0.exposed_s},
                                {&e.min.step_s, &e.min.compute_s, &e.min.comm_s, &e.min.exposed_s},
                                {&e.median.step_s, &e.median.compute_s, &e.median.comm_s, &e.median.exposed_s},
                                {&e.max.step_s, &e.max.compute_s, &e.max.comm_s, &e.max.exposed_s}};
  for (int r = 0; r < comm.size(); ++r) {
    const double* t = &all[static_cast<size_t>(r) * kFields];
    e.ranks.push_back({t[0], t[1], t[2], t[3]});
  }
  std::vector<double> column(static_cast<size_t>(comm.size()));
  for (int f = 0; f < kFields; ++f) {
    for (int r = 0; r < comm.size(); ++r) column[r] = all[static_cast<size_t>(r) * kFields + f];
    *fields[0][f] = column[0];
    *fields[1][f] = *std::min_element(column.begin(), column.end());
    *fields[2][f] = median(column);
    *fields[3][f] = *std::max_element(column.begin(), column.end());
  }
  return e;
}

}  // namespace dtnn
