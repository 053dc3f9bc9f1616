// GradientReducer: data parallelism's gradient sum and the optimizer update of one training step, blocking
// (PyDTNN's default) or overlapped with the backward pass (PyDTNN's --non_blocking_mpi, bucketed as
// PyTorch DDP does), and the measurement of what communication cost the step.
//
// Buckets (plan_buckets): contiguous ranges of the gradient slab, so a bucket's collective runs on the slab
// itself with no packing copy. They are filled in reverse layer order (the order backward produces
// gradients): a layer's parameters are never split; a bucket closes once it holds at least its cap (the first
// one min(1 MiB, cap), DDP's small first bucket, so communication starts early; --gradient_bucket_mb=0:
// one bucket per layer with parameters, PyDTNN's one collective per layer). The cap is at most the
// gradient / --gradient_buckets_min (default 4): DDP's 25 MiB assumes models far larger than that, and a
// model of a few MiB got one or two buckets, the first closing late in the backward pass, which hid little of
// the communication (measured in results/baselines/overlap_2core.md). The loss/metric tail
// the trainer packs behind the gradients rides with the FIRST bucket: it is contiguous with the top layers'
// gradients and known before backward starts (the trainer fills it first), so it costs no extra message.
//
// A step (several ranks): begin_step(); the model's backward with this object as its hook (non-blocking:
// after_layer() starts every bucket whose last layer is done, then MPI_Test's the oldest outstanding request,
// since Open MPI 4.1 advances non-blocking collectives only inside MPI calls); finish() starts what is left
// (every rank starts every bucket in the same order, also a rank with no samples whose backward never ran)
// and then, bucket by bucket in start order, waits for its sum and updates its range, so the update of one
// bucket overlaps the sums still in flight. Blocking: finish() sums the whole slab and tail in one
// MPI_Allreduce, then updates. The update is bit-identical either way (element-wise rules).
//
// What one step costs, summed per epoch on each rank (RankTimes):
//   step_s     begin_step() to the end of the update;
//   compute_s  forward, loss, backward and update, less the time inside communication calls made meanwhile
//              (timed as segments, so compute + comm = step time up to the glue between them is a real
//              check; compute + exposed leaves out the calls made between layers, a few per cent of a small
//              CNN's step and more when ranks outnumber cores and one is descheduled inside MPI_Test
//              (results/baselines/overlap_2core.md); kept apart, as step_replay and the cost model split it);
//   comm_s     time inside communication calls (start, test, wait, blocking allreduce);
//   exposed_s  the part of comm_s spent after the rank's own backward pass finished (the final waits, or the
//              whole blocking allreduce): time the step spent waiting for communication.
// Nothing allocates after construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "parallel/distribution.h"
#include "trace/tracer.h"

namespace dtnn {

// Buckets for a model whose top-level layer i holds slab range [param_begin[i], param_begin[i + 1])
// (param_begin has layers + 1 entries, the last the slab size) plus `tail` floats after the slab, with
// caps of bucket_mb MiB (0: one bucket per layer), lowered to ceil(slab / min_buckets) floats when that is
// smaller (the tail not counted; 1: bucket_mb alone). Layers without parameters are skipped; a model with no
// parameters gets one bucket holding the tail. A bucket never exceeds INT_MAX floats (a larger layer is
// split into several buckets ready after it). tail_alone: the tail is a bucket of its own (started first), never
// merged into the top layers' bucket (the bf16 sum rounds gradients, not the loss and metric sums).
std::vector<GradientBucket> plan_buckets(const std::vector<int64_t>& param_begin, int64_t tail, double bucket_mb,
                                         int64_t min_buckets = 1, bool tail_alone = false);

// The epoch figures over every rank from each rank's sums (collective: every rank calls it at the same point).
EpochComm gather_epoch_comm(Communicator& comm, const RankTimes& times, int64_t steps, const char* mode,
                            int64_t buckets_per_step, double bytes_per_step);

class GradientReducer final : public Distribution, public BackwardHook {
 public:
  // `tail` floats follow the model's gradient slab and are summed with it. One rank: no communication.
  // bf16 (--allreduce_dtype=bfloat16): the gradients travel and are summed as bfloat16 (half the bytes; rounded
  // into a buffer of the slab's size made here, and widened back before the update), the tail in float32.
  GradientReducer(Communicator& comm, const Model& model, int64_t tail, bool non_blocking, double bucket_mb,
                  int64_t min_buckets, bool bf16 = false);

  // The hook to give Model::backward: this object when buckets are started during backward, else null.
  BackwardHook* hook() override { return overlapped_ ? this : nullptr; }
  bool overlapped() const override { return overlapped_; }
  void begin_step() override;
  void after_layer(size_t layer) override;
  void finish_step(Optimizer& optimizer, float* params) override;

  const std::vector<GradientBucket>& buckets() const override { return buckets_; }
  const RankTimes& times() const override { return times_; }
  void reset_times() override;
  EpochComm gather_epoch() override { return gather_epoch_over(comm_); }
  // The epoch figures over `comm`'s ranks (collective over them): model averaging's steps reduce over one
  // process and report over the world.
  EpochComm gather_epoch_over(Communicator& comm) const;
  // Records communication calls, each bucket's sum in flight, waits and updates (null: none).
  void set_tracer(Tracer* tracer, GpuTrace*) override { tracer_ = tracer; }

 private:
  void start(size_t b);
  void allreduce_all();                   // blocking: the whole slab and tail
  bool in_bf16(size_t b) const;           // bucket b travels as bf16
  int64_t bucket_bytes(size_t b) const;   // what bucket b puts on the wire
  int64_t wire_bytes() const;             // what a step puts on the wire
  void completed(size_t b, double when);  // the tracer's in-flight event of bucket b

  Communicator& comm_;
  float* grads_;
  int64_t total_floats_;  // slab + tail
  int64_t slab_;          // the gradients (the tail follows them)
  bool reduce_, overlapped_, bf16_;
  std::vector<uint16_t> wire_;  // bf16: the gradients as they travel
  std::vector<GradientBucket> buckets_;
  size_t next_start_ = 0, next_test_ = 0;
  double step_t0_ = 0.0, comm_in_step_ = 0.0;
  RankTimes times_;
  int64_t steps_ = 0;
  Tracer* tracer_ = nullptr;
  std::vector<double> started_at_;  // per bucket, this step (tracing)
  std::vector<int32_t> layer_ids_;  // per top-level layer index: its id (the comm_calls event's id)
};

}  // namespace dtnn
