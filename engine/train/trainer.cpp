#include "train/trainer.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backend/gpu_ops.h"
#include "core/clock.h"
#include "core/error.h"

namespace dtnn {
namespace {

// GPU: the running sums are read back for the progress line every this many steps (and at the end).
constexpr int64_t kProgressEvery = 25;

Augmentation augmentation_of(const TrainOptions& o) {
  Augmentation a;
  a.flip = o.flip_images;
  a.flip_prob = o.flip_images_prob;
  a.crop = o.crop_images;
  a.crop_prob = o.crop_images_prob;
  a.crop_padding = o.crop_images_padding;
  a.crop_size = o.crop_images_size;
  a.seed = o.seed;
  return a;
}

bool communicates_in_step(const Layer& layer) {
  if (layer.communicates_in_step()) return true;
  for (const Layer* child : layer.children())
    if (child->communicates_in_step()) return true;
  return false;
}

}  // namespace

uint64_t epoch_seed(uint64_t seed, int epoch) { return Rng(seed ^ 0xE90C5EEDull).fork(static_cast<uint64_t>(epoch)).next_u64(); }

Rng epoch_rng(uint64_t seed, int epoch) { return Rng(seed ^ 0x5F1FF1E5ull).fork(static_cast<uint64_t>(epoch)); }

void share_root_weights(Model& model, Communicator& comm) {
  if (comm.size() > 1) {
    comm.broadcast(model.host_param_slab(), model.slab_size(), 0);
    if (model.state_size() > 0) comm.broadcast(model.host_state_slab(), model.state_size(), 0);
  }
  model.upload();
}

// The sample schedule of these options: worker blocks under model averaging (claimed at run time with
// --dynamic_blocks), else the even split; steps per walk from --num_batches_per_worker or --steps_per_epoch.
ScheduleOptions schedule_options(const TrainOptions& o) {
  ScheduleOptions s;
  s.worker_blocks = o.model_averaging != "none";
  s.dynamic = s.worker_blocks && o.dynamic_blocks &&
              (o.model_averaging == "asynchronous" || o.model_averaging == "partially_asynchronous");
  s.blocks = BlockOptions{o.blocks_per_worker, o.shuffle_blocks, o.shuffle_block_data};
  s.fixed_steps = s.worker_blocks && o.num_batches_per_worker > 0 ? o.num_batches_per_worker : o.steps_per_epoch;
  s.seed = o.seed;
  return s;
}

int64_t Trainer::reduce_tail_floats(const TrainOptions& options) {
  return 2 + static_cast<int64_t>(parse_metrics(options.metrics).size());  // loss, metrics, count
}

Trainer::Trainer(Model& model, const Dataset& data, Communicator& comm, Optimizer& optimizer,
                 const TrainOptions& options)
    : model_(model), data_(data), comm_(comm), optimizer_(optimizer), options_(options),
      global_batch_(options.model_averaging != "none" ? options.batch_size : global_batch(options, comm.size())),
      loss_{parse_loss(options.loss_func)},
      metrics_(parse_metrics(options.metrics)), shuffle_rng_(options.seed ^ 0x5F1FF1E5ull),
      local_comm_(options.model_averaging != "none" ? make_local_communicator() : nullptr),
      reducer_(local_comm_ ? *local_comm_ : comm, model, reduce_tail_floats(options), options.non_blocking_mpi,
               options.gradient_bucket_mb, options.gradient_buckets_min),
      schedule_(data, comm, global_batch_, schedule_options(options)),
      shares_(options.model_averaging != "none" ? "" : options.rank_batch_shares, comm.size(), comm.rank()),
      loader_(data, model.layout(), model.max_batch(), augmentation_of(options), options.prefetch) {
  const Shape out = model.output_shape();
  DTNN_CHECK(out.rank() == 1, "model ", model.name(), " must end in a flat output, not ", out.str());
  classes_ = out[0];
  DTNN_CHECK(classes_ == data.shape().classes, "model ", model.name(), " has ", classes_, " outputs but dataset ",
             data.shape().name, " has ", data.shape().classes, " classes");
  const Shape in = model.input_shape();
  DTNN_CHECK(in.numel() == data.shape().h * data.shape().w * data.shape().c, "model ", model.name(),
             " expects inputs of shape ", in.str(), ", dataset ", data.shape().name, " has ", data.shape().h, "x",
             data.shape().w, "x", data.shape().c);
  fused_softmax_ = loss_[0] == LossKind::categorical_cross_entropy &&
                   model.layer(model.num_layers() - 1).type() == "Softmax" && model.num_layers() >= 3;
  const int64_t rank_batch = options.model_averaging != "none"
                                 ? global_batch_
                                 : largest_rank_batch(global_batch_, parse_batch_shares(options.rank_batch_shares),
                                                      comm.size(), comm.rank());
  DTNN_CHECK(rank_batch <= model.max_batch(), "a global batch of ", global_batch_, " over ", comm.size(),
             " ranks needs per-rank buffers of ", rank_batch, " samples here; the model was built for ", model.max_batch());
  batch_indices_.resize(model.max_batch());
  eval_sums_.resize(2 + metrics_.size());
  for (size_t i = 0; i < model.num_layers(); ++i) every_rank_steps_ |= communicates_in_step(model.layer(i));
  every_rank_steps_ &= comm.size() > 1;
  merger_ = make_weight_merger(options, comm, model, optimizer);
  epoch_sums_.resize(2 + metrics_.size());
  if (const Straggler s = parse_straggler(options.straggler_ms); s.rank == comm.rank()) straggler_ms_ = s.ms;
  if (const SlowRank s = parse_slow_rank(options.straggler_factor); s.rank == comm.rank()) slow_factor_ = s.factor;
  gpu_ = model.device() == Device::gpu;
  if (gpu_) {
    static_assert(static_cast<int>(MetricKind::categorical_accuracy) == 0 &&
                      static_cast<int>(MetricKind::regression_mae) == 5,
                  "GPU metric codes follow MetricKind (backend/gpu/loss.cu)");
    static_assert(static_cast<int>(LossKind::binary_cross_entropy) == static_cast<int>(gpu::LossCode::binary_cross_entropy),
                  "GPU loss codes follow LossKind");
    DTNN_CHECK(metrics_.size() <= 8, "at most 8 metrics on the GPU");
    for (MetricKind m : metrics_) metric_codes_.push_back(static_cast<int>(m));
    labels_dev_ = Tensor::zeros(Shape{model.max_batch(), classes_}, Layout::flat, Device::gpu);
    loss_scratch_ = Tensor::zeros(Shape{model.max_batch() * gpu::kLossScratchPerRow}, Layout::flat, Device::gpu);
    sums_dev_ = Tensor::zeros(Shape{static_cast<int64_t>(2 + metrics_.size())}, Layout::flat, Device::gpu);
    sums_host_.resize(2 + metrics_.size());
    if (const char* step = std::getenv("DTNN_CUDA_PROFILE_STEP"); step && *step) {
      char* end = nullptr;
      profile_step_ = std::strtoll(step, &end, 10);
      DTNN_CHECK(*end == '\0' && profile_step_ >= 0, "DTNN_CUDA_PROFILE_STEP='", step,
                 "': expected a training step number (0, 1, ...)");
    }
    input_ = std::make_unique<gpu::InputStager>(sizeof(float) * model.max_batch() * model.input_shape().numel(),
                                                sizeof(float) * model.max_batch() * classes_);
    loader_.pin_host_memory();
    comm.reserve_device_staging(model.slab_size() + reduce_tail_floats(options));
    gpu_reducer_ = std::make_unique<GpuGradientReducer>(comm, model, reduce_tail_floats(options),
                                                        options.non_blocking_mpi, options.gradient_bucket_mb,
                                                        options.gradient_buckets_min, every_rank_steps_);
  }
}

void Trainer::set_tracer(Tracer* tracer) {
  tracer_ = tracer;
  reducer_.set_tracer(tracer);
  if (!gpu_) {
    model_.set_tracer(tracer);
    return;
  }
  // Marks per step: two per layer forward and backward, loss, gradient sum and update, the step's own two.
  gpu_trace_ = tracer ? std::make_unique<GpuTrace>(*tracer, static_cast<int>(4 * model_.num_layers() + 16)) : nullptr;
  model_.set_gpu_trace(gpu_trace_.get());
  gpu_reducer_->set_gpu_trace(gpu_trace_.get());
}

void Trainer::flush_trace() {
  if (gpu_trace_) gpu_trace_->flush();
}

std::vector<std::string> Trainer::value_names() const {
  std::vector<std::string> names{loss_name(loss_[0])};
  for (MetricKind m : metrics_) names.push_back(metric_name(m));
  return names;
}

void Trainer::local_share(const Communicator& comm, int64_t global, int64_t* offset, int64_t* count) const {
  if (&comm == &comm_) shares_.split(global, offset, count);
  else split_batch(global, {}, comm.size(), comm.rank(), offset, count);
}

double Trainer::compute_so_far() const { return gpu_ ? gpu_reducer_->times().compute_s : reducer_.times().compute_s; }

void Trainer::gpu_upload(const Batch& batch) {
  const int64_t n = batch.count;
  input_->upload(batch.x, sizeof(float) * n * model_.input_shape().numel(), model_.input().data(), batch.y,
                 sizeof(float) * n * classes_, labels_dev_.data());
}

void Trainer::gpu_loss(int64_t n, double global_n, bool training, float* out, bool accumulate) {
  const size_t last = model_.num_layers() - 1;
  const float* logits = fused_softmax_ ? model_.activation(last - 1, n).data() : nullptr;
  float* grad = nullptr;
  if (training) grad = (fused_softmax_ ? model_.gradient(last - 1, n) : model_.gradient(last, n)).data();
  gpu::loss_and_metrics(static_cast<gpu::LossCode>(loss_[0]), logits, model_.output(n).data(), labels_dev_.data(), n,
                        classes_, static_cast<float>(1.0 / global_n), grad, metric_codes_.data(),
                        static_cast<int>(metric_codes_.size()), out, accumulate, loss_scratch_.data());
}

void Trainer::train_step_gpu(const Batch& batch, int64_t global_n) {
  const size_t last = model_.num_layers() - 1;
  const int64_t n = batch.count;
  float* tail = model_.reduce_tail();
  const int64_t values = 1 + static_cast<int64_t>(metrics_.size());
  GpuTrace* const trace = gpu_trace_.get();  // null unless tracing: one test per call
  if (trace) {
    tracer_->set_step(steps_run_);
    trace->begin_step(steps_run_);
  }
  gpu_reducer_->begin_step();
  // The tail (loss, metric sums, count) is complete before backward: it rides with the first bucket, which
  // may be summed while backward still runs.
  if (n > 0) {
    gpu_upload(batch);
    model_.forward(n, Mode::train);
    const int loss_begin = trace ? trace->mark() : -1;
    gpu_loss(n, static_cast<double>(global_n), true, tail, false);
    if (trace) trace->span(TraceKind::loss, -1, loss_begin);
    gpu::set_value(tail + values, static_cast<float>(n));
    model_.backward(n, fused_softmax_ ? last - 1 : last, gpu_reducer_->hook());
  } else {
    gpu::memset_zero(model_.grad_slab(), (model_.slab_size() + values) * sizeof(float));
    gpu::set_value(tail + values, 0.0f);
  }
  gpu_reducer_->finish(optimizer_, model_.param_slab());
  gpu::accumulate(sums_dev_.data(), tail, values + 1);
  if (trace) trace->end_step();
}

void Trainer::train_step(const Batch& batch, int64_t global_n, double began) {
  if (gpu_) return train_step_gpu(batch, global_n);
  const size_t last = model_.num_layers() - 1;
  const int64_t n = batch.count;
  const float* labels = batch.y;
  float* tail = model_.reduce_tail();
  const double t0 = began;  // the step event's begin: before a deliberate straggler delay
  if (tracer_) tracer_->set_step(steps_run_);
  reducer_.begin_step();
  // The tail (loss, metric sums, count) is filled before backward: it rides with the first bucket, which
  // may be summed while backward still runs.
  tail[1 + metrics_.size()] = static_cast<float>(n);
  if (n > 0) {
    std::memcpy(model_.input().data(), batch.x, sizeof(float) * n * model_.input_shape().numel());
    model_.forward(n, Mode::train);
    const double loss_t0 = tracer_ ? now_s() : 0.0;
    const Tensor p = model_.output(n);
    const size_t top = fused_softmax_ ? last - 1 : last;
    const double loss =
        fused_softmax_ ? cce_from_logits(model_.activation(last - 1, n).data(), labels, n, classes_,
                                         static_cast<double>(global_n), model_.gradient(last - 1, n).data())
                       : loss_from_output(loss_[0], p.data(), labels, n, classes_, static_cast<double>(global_n),
                                          model_.gradient(last, n).data());
    tail[0] = static_cast<float>(loss);
    for (size_t m = 0; m < metrics_.size(); ++m)
      tail[1 + m] = static_cast<float>(metric_sum(metrics_[m], p.data(), labels, n, classes_));
    if (tracer_) tracer_->add(TraceKind::loss, -1, loss_t0, now_s());
    model_.backward(n, top, reducer_.hook());
  } else {
    std::memset(model_.grad_slab(), 0, model_.slab_size() * sizeof(float));
    for (size_t m = 0; m <= metrics_.size(); ++m) tail[m] = 0.0f;
  }
  reducer_.finish(optimizer_, model_.param_slab());
  if (tracer_) tracer_->add(TraceKind::step, -1, t0, now_s());
}

EpochRecord Trainer::run_epoch(int epoch, int num_epochs, const Splits& splits) {
  EpochRecord rec;
  rec.epoch = epoch;
  shuffle_rng_ = epoch_rng(options_.seed, epoch);
  model_.seed_layers(epoch_seed(options_.seed, epoch), comm_.rank());
  const bool local = merger_ != nullptr;
  // Asynchronous model averaging: no rank meets another between merges, so the epoch's figures, timing
  // and validation are this rank's own (over the one-process communicator); finish_training() meets.
  const bool async = merger_ && merger_->asynchronous();
  Communicator& epoch_comm = async ? *local_comm_ : comm_;
  schedule_.begin_epoch(epoch, num_epochs, splits.train, shuffle_rng_);
  const int64_t global_batch = global_batch_;
  const int64_t shown = schedule_.shown();
  const std::string label = "Epoch " + std::to_string(epoch) + "/" + std::to_string(num_epochs);
  std::vector<double> sums(1 + metrics_.size(), 0.0), means(sums.size());
  int64_t done = 0;
  const float* tail = gpu_ ? nullptr : model_.reduce_tail();
  const bool augment = options_.flip_images || options_.crop_images;
  // The samples of global batch `step`: the last one may be short. When layers communicate inside the
  // step, a rank with no samples would miss their collectives (a hang), so a last batch smaller than the
  // rank count takes one sample per rank, the extra ones wrapping to the start of the epoch's order.
  SampleWalk w;  // the walk being trained (schedule_.next)
  auto global_count = [&](int64_t step) {
    const int64_t n = std::min(global_batch, w.total - step * global_batch);
    return every_rank_steps_ ? std::max<int64_t>(n, comm_.size()) : n;
  };
  auto submit = [&](int64_t step) {  // this rank's share of global batch `step` (all of it: local), to the loader
    const int64_t start = step * global_batch;
    int64_t offset = 0, n = global_count(step);
    if (!local) local_share(comm_, n, &offset, &n);
    for (int64_t i = 0; i < n; ++i) batch_indices_[i] = w.order[(start + offset + i) % w.count];
    loader_.submit(Pool::train, batch_indices_.data(), n, augment, epoch);
  };
  if (gpu_) gpu::memset_zero(sums_dev_.data(), sums_host_.size() * sizeof(float));
  reducer_.reset_times();
  if (gpu_reducer_) gpu_reducer_->reset_times();
  const double t0 = now_s();
  // w.steps batches over w.order[0, w.count) (cycled), w.total samples: the rank's share, or one claimed block.
  auto walk = [&] {
    const int64_t steps = w.steps;
    loader_.reset();
    if (steps > 0) submit(0);
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t global_n = global_count(step);
      const double wait_t0 = tracer_ ? now_s() : 0.0;
      const Batch batch = loader_.wait();
      if (tracer_) {
        tracer_->set_step(steps_run_);
        tracer_->add(TraceKind::data_wait, -1, wait_t0, now_s(), 0, gpu_ ? 1 : 0);  // GPU: lane 0 is the stream
      }
      if (step + 1 < steps) {
        if (gpu_ && step > 0) input_->wait_host_read();  // the slot submit() refills held the previous step's batch
        submit(step + 1);                            // decoded while this step computes
      }
      if (batch_begin_) batch_begin_();
      const bool profiled = gpu_ && steps_run_ == profile_step_;
      if (profiled) gpu::profiler_start();
      // Deliberate slowness: a fixed sleep (--straggler_ms), or F - 1 times the last step's compute
      // (--straggler_factor: a slower device, whose delay follows its share of the batch).
      // Traced, the delay is part of the step (CPU): the rank is busy as a slower device would be, and the
      // stragglers table (busy = step + data wait - exposed) sees it.
      const double sleep_t0 = shares_.measuring() || tracer_ ? now_s() : 0.0;
      if (straggler_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(straggler_ms_));
      if (slow_factor_ > 1.0 && last_compute_s_ > 0.0)
        std::this_thread::sleep_for(std::chrono::duration<double>((slow_factor_ - 1.0) * last_compute_s_));
      const double slept = shares_.measuring() ? now_s() - sleep_t0 : 0.0;
      const double compute_t0 = compute_so_far();
      train_step(batch, global_n, sleep_t0);
      if (gpu_ && shares_.measuring()) gpu_reducer_->read_pending();  // this step's device time, not two ago
      last_compute_s_ = compute_so_far() - compute_t0;
      shares_.after_step(comm_, last_compute_s_ + slept, batch.count);
      if (merger_) merger_->after_step();
      if (profiled) gpu::profiler_stop();
      ++steps_run_;
      if (gpu_) {  // the device keeps the sums; read them now and then for the progress line
        done += global_n;
        if (progress_ && ((step + 1) % kProgressEvery == 0 || step + 1 == steps)) {
          gpu::copy_to_host(sums_host_.data(), sums_dev_.data(), sums_host_.size() * sizeof(float));
          for (size_t v = 0; v < sums.size(); ++v) means[v] = sums_host_[v] / static_cast<double>(done);
        }
        if (progress_) progress_(label, done, shown, now_s() - t0, means, false);
        continue;
      }
      for (size_t v = 0; v < sums.size(); ++v) sums[v] += tail[v];
      done += static_cast<int64_t>(tail[sums.size()]);
      if (progress_) {
        for (size_t v = 0; v < sums.size(); ++v) means[v] = sums[v] / static_cast<double>(done);
        progress_(label, done, shown, now_s() - t0, means, false);
      }
    }
  };
  // One walk, or (dynamic blocks) one per block this rank claims until none is left.
  while (schedule_.next(epoch, &w)) {
    walk();
    if (schedule_.dynamic()) merger_->end_block();
  }
  if (gpu_) {
    gpu::copy_to_host(sums_host_.data(), sums_dev_.data(), sums_host_.size() * sizeof(float));  // waits
    for (size_t v = 0; v < sums.size(); ++v) sums[v] = sums_host_[v];
  }
  // The epoch's average comes first: the first collective after the loop is where the ranks wait for the
  // slowest, and that wait belongs to the average.
  if (merger_) rec.averaging = merger_->end_epoch(epoch, epoch == num_epochs);
  if (local && !async && comm_.size() > 1) {  // each rank summed its own batches: the epoch's figures over every rank
    for (size_t v = 0; v < sums.size(); ++v) epoch_sums_[v] = static_cast<float>(sums[v]);
    epoch_sums_[sums.size()] = static_cast<float>(done);
    comm_.allreduce_sum(epoch_sums_.data(), static_cast<int64_t>(epoch_sums_.size()));
    for (size_t v = 0; v < sums.size(); ++v) sums[v] = epoch_sums_[v];
    done = static_cast<int64_t>(epoch_sums_[sums.size()]);
  }
  rec.train.time_s = epoch_comm.max(now_s() - t0);
  rec.comm = gpu_ ? gpu_reducer_->gather_epoch(epoch_comm) : reducer_.gather_epoch(epoch_comm);
  rec.learning_rate = optimizer_.learning_rate();
  rec.train.samples = done;
  rec.train.values.resize(sums.size());
  for (size_t v = 0; v < sums.size(); ++v) rec.train.values[v] = done ? sums[v] / static_cast<double>(done) : 0.0;
  // Model averaging: every rank ran `total` samples of its own; the last line counts them all.
  const int64_t shown_total = local && !async ? schedule_.planned_total() * comm_.size() : shown;
  if (progress_) progress_(label, done, shown_total, rec.train.time_s, rec.train.values, true);
  // Asynchronous: a rank other than 0 would validate alone for figures nobody reports, and a straggler
  // would spend that time too; so only rank 0 does, unless this rank's schedulers read them.
  const bool validates = !async || comm_.rank() == 0 || validate_every_rank_;
  if (splits.val.empty() || !validates) return rec;
  if (local && !async && comm_.size() > 1 && !merger_->ranks_agree()) {
    // Synchronous averaging between two averages: the ranks hold different models, and a validation pass
    // sharded over them would score no model at all. Rank 0's model, over the whole validation set; its
    // figures go to every rank, whose schedulers must take the same decisions.
    PassResult v;
    if (comm_.rank() == 0) v = evaluate_on(*local_comm_, splits.val_pool, splits.val, "");
    double head[2] = {static_cast<double>(v.samples), v.time_s};
    comm_.broadcast_bytes(head, sizeof head, 0);
    v.values.resize(metrics_.size() + 1);
    comm_.broadcast_bytes(v.values.data(), static_cast<int64_t>(v.values.size() * sizeof(double)), 0);
    v.samples = static_cast<int64_t>(head[0]);
    v.time_s = head[1];
    rec.val = std::move(v);
    return rec;
  }
  rec.val = evaluate_on(epoch_comm, splits.val_pool, splits.val, "");
  return rec;
}

std::optional<AveragingStats> Trainer::finish_training() {
  if (!merger_) return std::nullopt;
  AveragingStats stats = merger_->finish();
  if (std::vector<int64_t> blocks = schedule_.finish(); !blocks.empty()) stats.blocks_per_rank = blocks;  // collective
  return stats;
}

PassResult Trainer::evaluate(Pool pool, const std::vector<int64_t>& indices, const std::string& label) {
  return evaluate_on(comm_, pool, indices, label);
}

PassResult Trainer::evaluate_on(Communicator& comm, Pool pool, const std::vector<int64_t>& indices,
                                const std::string& label) {
  const size_t last = model_.num_layers() - 1;
  const int64_t total = static_cast<int64_t>(indices.size());
  const int64_t global_batch = global_batch_;
  std::vector<double> local(1 + metrics_.size(), 0.0);
  int64_t local_count = 0;
  const int64_t batches = (total + global_batch - 1) / global_batch;
  auto submit = [&](int64_t k) {  // this rank's share of batch k (never augmented), to the loader
    const int64_t start = k * global_batch;
    int64_t offset, n;
    local_share(comm, std::min(global_batch, total - start), &offset, &n);
    for (int64_t i = 0; i < n; ++i) batch_indices_[i] = indices[start + offset + i];
    loader_.submit(pool, batch_indices_.data(), n, false, 0);
  };
  if (gpu_) gpu::memset_zero(sums_dev_.data(), sums_host_.size() * sizeof(float));
  model_.set_tracer(nullptr);  // one event for the pass, not one per layer and batch (the buffer is sized for steps)
  // Per-layer times are the training steps': evaluation forwards (no backward, other batch sizes) would pull
  // the reported forward times toward a different workload.
  struct TimingOff {
    Model& m;
    const bool was;
    explicit TimingOff(Model& model) : m(model), was(model.time_layers()) { m.set_time_layers(false); }
    ~TimingOff() { m.set_time_layers(was); }
  } timing_off(model_);
  if (gpu_trace_) {  // the pass is timed on the host: the stream must be idle at its start (one lane)
    gpu_trace_->flush();
    model_.set_gpu_trace(nullptr);
  }
  std::vector<double> means(local.size());  // the progress line's, sized before the batch loop
  const double t0 = now_s();
  loader_.reset();
  if (batches > 0) submit(0);
  for (int64_t k = 0; k < batches; ++k) {
    const Batch batch = loader_.wait();
    if (k + 1 < batches) {
      if (gpu_ && k > 0) input_->wait_host_read();
      submit(k + 1);
    }
    const int64_t n = batch.count;
    if (n == 0) continue;
    if (gpu_) {
      gpu_upload(batch);
      model_.forward(n, Mode::evaluate);
      gpu_loss(n, 1.0, false, sums_dev_.data(), true);
      local_count += n;
      continue;
    }
    std::memcpy(model_.input().data(), batch.x, sizeof(float) * n * model_.input_shape().numel());
    model_.forward(n, Mode::evaluate);
    const float* p = model_.output(n).data();
    const float* logits = fused_softmax_ ? model_.activation(last - 1, n).data() : nullptr;
    local[0] += loss_value(loss_[0], logits, p, batch.y, n, classes_);
    for (size_t m = 0; m < metrics_.size(); ++m) local[1 + m] += metric_sum(metrics_[m], p, batch.y, n, classes_);
    local_count += n;
    if (progress_ && !label.empty() && comm.size() == 1) {
      for (size_t v = 0; v < local.size(); ++v) means[v] = local[v] / static_cast<double>(local_count);
      progress_(label, local_count, total, now_s() - t0, means, false);
    }
  }
  if (gpu_) {
    gpu::copy_to_host(sums_host_.data(), sums_dev_.data(), sums_host_.size() * sizeof(float));  // waits
    for (size_t v = 0; v < local.size(); ++v) local[v] = sums_host_[v];
  }
  for (size_t v = 0; v < local.size(); ++v) eval_sums_[v] = static_cast<float>(local[v]);
  eval_sums_[local.size()] = static_cast<float>(local_count);
  comm.allreduce_sum(eval_sums_.data(), static_cast<int64_t>(eval_sums_.size()));
  if (tracer_) {
    tracer_->set_step(-1);
    tracer_->add(TraceKind::evaluate, -1, t0, now_s());
    if (gpu_trace_) model_.set_gpu_trace(gpu_trace_.get());
    else model_.set_tracer(tracer_);
  }
  PassResult result;
  result.time_s = comm.max(now_s() - t0);
  result.samples = static_cast<int64_t>(eval_sums_[local.size()]);
  for (size_t v = 0; v < local.size(); ++v)
    result.values.push_back(result.samples ? eval_sums_[v] / static_cast<double>(result.samples) : 0.0);
  if (progress_ && !label.empty()) progress_(label, result.samples, total, result.time_s, result.values, true);
  return result;
}

}  // namespace dtnn
