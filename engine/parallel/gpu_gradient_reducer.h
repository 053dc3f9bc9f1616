// GpuGradientReducer: data parallelism's gradient sum and optimizer update for a GPU model (the GPU half of
// parallel/gradient_reducer.h), blocking or overlapped with the backward pass, and what communication cost.
//
// Blocking (PyDTNN's default): after the backward pass one reduction of the whole gradient slab and the
// loss/metric tail: NCCL on the compute stream (--enable_nccl), or the staged path of
// Communicator::allreduce_sum_device (device -> pinned host -> MPI_Allreduce -> device).
//
// Non-blocking (--non_blocking_mpi): the CPU path's buckets (plan_buckets: contiguous slab ranges in reverse
// layer order, the tail in the first). As the backward pass is QUEUED (the host runs ahead of the device),
// after_layer() hands every bucket whose last layer is queued to a side stream (gpu::SideStream) that
// first waits, by a CUDA event, for the compute stream to reach that point; so a bucket's reduction runs
// while the device still computes the layers below it.
//   - NCCL: ncclAllReduce of the bucket in place on the side stream.
//   - MPI (staged): the side stream copies the bucket to pinned host memory; the host starts its
//     MPI_Iallreduce once the copy is done (polled with cudaEventQuery at every later layer, never waited
//     for during backward) and MPI_Test's the oldest in flight; a bucket summed on the host is copied back
//     on the side stream. So one bucket's device-to-host copy overlaps another's reduction, and both
//     overlap compute. finish() drives what is left to the end (waiting where nothing can progress).
//     When a layer communicates inside the step (synchronised BatchNormalization: a blocking MPI
//     collective during backward), no MPI call is made during backward: when a copy is done differs
//     between ranks, and MPI needs every rank to issue its collectives in one order; the copies still
//     overlap backward, the sums start in finish().
// finish() then makes the compute stream wait for the side stream's last bucket (its work is in order)
// and queues the optimizer's update of the whole slab. Every rank starts every bucket in the same order,
// also a rank with no samples whose backward never ran. Sums are bit-identical to the blocking path with
// 2 ranks (a sum of two operands does not depend on how the data is cut).
//
// What a step costs, measured with CUDA events on the device timeline (timing adds no synchronisation: a
// step's events are read two steps later, when begin_step waits for that step anyway, or when the epoch's
// figures are gathered; the staged path's finish() does block the host until every sum is back):
//   step_s     the compute stream from the step's first queued work to the end of the update;
//   exposed_s  the compute stream waiting for communication: from the end of backward to the start of
//              the update (blocking: the reduction itself, and with the staged path the device idles
//              while the host runs MPI);
//   compute_s  step_s - exposed_s (the device's forward, loss, backward and update);
//   comm_s     blocking: exposed_s; non-blocking NCCL: the reductions' device time on the side stream;
//              staged: both copies' device time plus the host's time inside MPI calls (start, test,
//              wait; not the host's waits for a copy).
// Nothing allocates after construction. One rank: nothing is reduced (mode "none"), the step is timed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/gpu_ops.h"
#include "trace/gpu_trace.h"
#include "parallel/distribution.h"
#include "parallel/gradient_reducer.h"

namespace dtnn {

class GpuGradientReducer final : public Distribution, public BackwardHook {
 public:
  // `tail` floats follow the model's gradient slab (device memory) and are summed with it.
  // layers_communicate: some layer makes MPI calls inside a step (see the staged path above).
  GpuGradientReducer(Communicator& comm, const Model& model, int64_t tail, bool non_blocking, double bucket_mb,
                     int64_t min_buckets, bool layers_communicate);
  ~GpuGradientReducer() override;
  GpuGradientReducer(const GpuGradientReducer&) = delete;
  GpuGradientReducer& operator=(const GpuGradientReducer&) = delete;

  BackwardHook* hook() override { return overlapped_ ? this : nullptr; }
  bool overlapped() const override { return overlapped_; }
  const std::vector<GradientBucket>& buckets() const override { return buckets_; }
  void begin_step() override;
  void after_layer(size_t layer) override;
  // Sums what is still unsummed and queues the optimizer's step on `params` (device memory).
  void finish_step(Optimizer& optimizer, float* params) override;
  void reset_times() override;
  // The sums of the steps read so far: a step's events are read when the step after the next begins, so
  // these lag the host by up to two steps unless read_pending() was called after finish_step().
  const RankTimes& times() const override { return times_; }
  // Waits for the device and reads every step still unread (--rank_batch_shares=auto, while it measures:
  // a synchronisation per step for those few steps only).
  void read_pending() override;
  // GPU timelines: spans for the reduction (blocking) or the wait for the buckets, and the update (null: none).
  void set_tracer(Tracer*, GpuTrace* trace) override { trace_ = trace; }
  // Reads every step's events still unread (waits for the device), then the figures over every rank
  // (collective).
  EpochComm gather_epoch() override;

 private:
  int side_slot(int parity, size_t bucket, int k) const {
    return static_cast<int>((static_cast<size_t>(parity) * buckets_.size() + bucket) * 4 + static_cast<size_t>(k));
  }
  void launch(size_t b);     // the side stream takes bucket b (NCCL: its sum; staged: its copy out)
  void copy_back(size_t b);  // staged: bucket b summed on the host, back to the device
  bool progress();           // staged: starts sums whose copy is out, tests the oldest; whether anything moved
  void read_step(int parity);

  Communicator& comm_;
  float* grads_;
  int64_t total_floats_;
  bool reduce_, overlapped_, nccl_, poll_in_backward_;
  std::vector<GradientBucket> buckets_;
  std::unique_ptr<gpu::SideStream> side_;
  gpu::EventPool events_;  // per parity: step start, backward end, update start, step end
  float* host_ = nullptr;  // staged: pinned host copy of the slab and tail
  size_t next_start_ = 0, next_mpi_ = 0, next_test_ = 0;
  int parity_ = 0;
  bool pending_[2] = {false, false};
  double host_mpi_s_[2] = {0.0, 0.0};
  int64_t order_[2] = {0, 0};  // which step each parity's events belong to (read oldest first)
  int64_t step_index_ = 0, steps_ = 0;
  RankTimes times_;
  GpuTrace* trace_ = nullptr;
};

}  // namespace dtnn
