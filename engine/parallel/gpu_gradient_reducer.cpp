#include "parallel/gpu_gradient_reducer.h"

#include "core/clock.h"
#include "core/error.h"

namespace dtnn {

namespace {
constexpr int kStart = 0, kBackwardEnd = 1, kUpdateStart = 2, kEnd = 3;  // compute-stream events per parity
constexpr int kBegin = 0, kOut = 1, kBackBegin = 2, kDone = 3;            // side-stream marks per bucket
}  // namespace

GpuGradientReducer::GpuGradientReducer(Communicator& comm, const Model& model, int64_t tail, bool non_blocking,
                                       double bucket_mb, int64_t min_buckets, bool layers_communicate)
    : comm_(comm), grads_(model.grad_slab()), total_floats_(model.slab_size() + tail), reduce_(comm.size() > 1),
      overlapped_(non_blocking && comm.size() > 1), nccl_(!comm.device_library().empty()),
      poll_in_backward_(!layers_communicate), events_(8) {
  DTNN_CHECK(model.device() == Device::gpu, "GpuGradientReducer: the model is not on the GPU");
  std::vector<int64_t> begins(model.num_layers() + 1);
  for (size_t i = 0; i <= model.num_layers(); ++i) begins[i] = model.param_begin(i);
  buckets_ = plan_buckets(begins, tail, bucket_mb, min_buckets);
  int64_t covered = 0;
  for (const GradientBucket& b : buckets_) covered += b.end - b.begin;
  DTNN_ASSERT(!buckets_.empty() && covered == total_floats_ - begins.front());  // every float summed once
  if (!overlapped_) return;
  const int slots = static_cast<int>(2 * buckets_.size() * 4);
  side_ = std::make_unique<gpu::SideStream>(slots);
  if (!nccl_) {
    host_ = static_cast<float*>(gpu::pinned_alloc(static_cast<size_t>(total_floats_) * sizeof(float)));
    comm_.reserve_requests(static_cast<int>(buckets_.size()));
  }
}

GpuGradientReducer::~GpuGradientReducer() {
  side_.reset();  // drains the side stream before the host buffer goes
  // A step that threw with host sums in flight (MPI_Iallreduce writing into host_): waiting here could hang
  // (a peer may be gone), freeing would hand MPI freed memory. The buffer is left to the process, which
  // is ending (run.cpp aborts the job on an error in training).
  if (host_ && next_test_ == next_mpi_) gpu::pinned_free(host_);
}

void GpuGradientReducer::reset_times() {
  times_ = RankTimes{};
  steps_ = 0;
}

void GpuGradientReducer::read_step(int parity) {
  const int e = 4 * parity;
  events_.wait(e + kEnd);
  const double step = events_.seconds(e + kStart, e + kEnd);
  const double exposed = events_.seconds(e + kBackwardEnd, e + kUpdateStart);
  double comm = exposed;
  if (overlapped_) {
    comm = host_mpi_s_[parity];
    for (size_t b = 0; b < buckets_.size(); ++b) {
      if (nccl_) {
        comm += side_->seconds(side_slot(parity, b, kBegin), side_slot(parity, b, kDone));
      } else {
        comm += side_->seconds(side_slot(parity, b, kBegin), side_slot(parity, b, kOut));
        comm += side_->seconds(side_slot(parity, b, kBackBegin), side_slot(parity, b, kDone));
      }
    }
  }
  times_.step_s += step;
  times_.exposed_s += exposed;
  times_.compute_s += step - exposed;
  times_.comm_s += comm;
  ++steps_;
  pending_[parity] = false;
}

void GpuGradientReducer::begin_step() {
  parity_ = static_cast<int>(step_index_ % 2);
  if (pending_[parity_]) read_step(parity_);  // two steps ago: long done, or nearly
  order_[parity_] = step_index_++;
  next_start_ = next_mpi_ = next_test_ = 0;
  host_mpi_s_[parity_] = 0.0;
  events_.record(4 * parity_ + kStart);
}

void GpuGradientReducer::launch(size_t b) {
  const GradientBucket& k = buckets_[b];
  const int64_t n = k.end - k.begin;
  side_->wait_compute(static_cast<int>(parity_ * buckets_.size() + b));
  side_->mark(side_slot(parity_, b, kBegin));
  if (nccl_) {
    comm_.allreduce_sum_device_on(grads_ + k.begin, n, side_->handle());
    side_->mark(side_slot(parity_, b, kDone));
  } else {
    side_->copy_to_host(host_ + k.begin, grads_ + k.begin, static_cast<size_t>(n) * sizeof(float));
    side_->mark(side_slot(parity_, b, kOut));
  }
}

void GpuGradientReducer::copy_back(size_t b) {
  const GradientBucket& k = buckets_[b];
  side_->mark(side_slot(parity_, b, kBackBegin));
  side_->copy_to_device(grads_ + k.begin, host_ + k.begin, static_cast<size_t>(k.end - k.begin) * sizeof(float));
  side_->mark(side_slot(parity_, b, kDone));
}

bool GpuGradientReducer::progress() {
  bool moved = false;
  double& in_mpi = host_mpi_s_[parity_];
  while (next_mpi_ < next_start_ && side_->passed(side_slot(parity_, next_mpi_, kOut))) {
    const GradientBucket& k = buckets_[next_mpi_];
    const double t0 = now_s();
    comm_.start_allreduce_sum(static_cast<int>(next_mpi_), host_ + k.begin, k.end - k.begin);
    in_mpi += now_s() - t0;
    ++next_mpi_;
    moved = true;
  }
  // One test of the oldest outstanding request drives the progress engine for all of them.
  while (next_test_ < next_mpi_) {
    const double t0 = now_s();
    const bool done = comm_.test_request(static_cast<int>(next_test_));
    in_mpi += now_s() - t0;
    if (!done) break;
    copy_back(next_test_++);
    moved = true;
  }
  return moved;
}

void GpuGradientReducer::after_layer(size_t layer) {
  if (!overlapped_) return;
  while (next_start_ < buckets_.size() && layer <= buckets_[next_start_].ready_after) launch(next_start_++);
  if (!nccl_ && poll_in_backward_ && next_test_ < next_start_) progress();
}

void GpuGradientReducer::finish_step(Optimizer& optimizer, float* params) {
  const int e = 4 * parity_;
  events_.record(e + kBackwardEnd);
  const int sum_begin = trace_ && reduce_ ? trace_->mark() : -1;
  if (!overlapped_) {
    if (reduce_) comm_.allreduce_sum_device(grads_, total_floats_);
    if (sum_begin >= 0) trace_->span(TraceKind::allreduce, 0, sum_begin);
  } else {
    while (next_start_ < buckets_.size()) launch(next_start_++);
    if (!nccl_) {
      while (next_test_ < buckets_.size()) {
        if (progress()) continue;
        if (next_test_ < next_mpi_ && next_mpi_ == buckets_.size()) {
          const double t0 = now_s();
          comm_.wait_request(static_cast<int>(next_test_));  // every sum started: wait for the oldest
          host_mpi_s_[parity_] += now_s() - t0;
          copy_back(next_test_++);
        } else if (next_test_ == next_mpi_) {
          side_->host_wait(side_slot(parity_, next_mpi_, kOut));  // nothing in flight: the next copy out
        }  // else: sums in flight and copies still coming out: poll both
      }
    }
    side_->compute_waits(side_slot(parity_, buckets_.size() - 1, kDone));  // in order: every bucket is back
    if (sum_begin >= 0) trace_->span(TraceKind::wait, 0, sum_begin);
  }
  events_.record(e + kUpdateStart);
  const int update_begin = trace_ ? trace_->mark() : -1;
  optimizer.step(params, grads_);
  if (trace_) trace_->span(TraceKind::update, 0, update_begin);
  events_.record(e + kEnd);
  pending_[parity_] = true;
}

void GpuGradientReducer::read_pending() {
  const int older = order_[0] <= order_[1] ? 0 : 1;
  for (int p : {older, 1 - older})
    if (pending_[p]) read_step(p);
}

EpochComm GpuGradientReducer::gather_epoch() {
  read_pending();
  return gather_epoch_comm(comm_, times_, steps_, !reduce_ ? "none" : overlapped_ ? "non_blocking" : "blocking",
                           !reduce_ ? 0 : overlapped_ ? static_cast<int64_t>(buckets_.size()) : 1,
                           reduce_ ? static_cast<double>(total_floats_) * sizeof(float) : 0.0);
}

}  // namespace dtnn
