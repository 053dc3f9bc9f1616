#include "train/trainer.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/clock.h"
#include "core/error.h"

namespace dtnn {
namespace {

// Devices that keep the running sums (GPUs) read them back for the progress line every this many steps of a
// walk, and at its end.
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

struct Trainer::Pass {
  std::string label;
  int64_t shown = 0;  // the samples the progress line counts to
  double t0 = 0.0;
};

Trainer::Trainer(Model& model, const Dataset& data, Communicator& comm, Optimizer& optimizer,
                 const TrainOptions& options)
    : model_(model), data_(data), comm_(comm), optimizer_(optimizer), options_(options),
      global_batch_(options.model_averaging != "none" ? options.batch_size : global_batch(options, comm.size())),
      losses_{parse_loss(options.loss_func)}, shuffle_rng_(options.seed ^ 0x5F1FF1E5ull),
      solo_(make_local_communicator()), schedule_(data, comm, global_batch_, schedule_options(options)),
      shares_(options.model_averaging != "none" ? "" : options.rank_batch_shares, comm.size(), comm.rank()),
      loader_(data, model.layout(), model.max_batch(), augmentation_of(options), options.prefetch) {
  const Shape out = model.output_shape();
  DTNN_CHECK(out.rank() == 1, "model ", model.name(), " must end in a flat output, not ", out.str());
  loss_ = StepLoss{losses_[0], parse_metrics(options.metrics), out[0], false};
  DTNN_CHECK(loss_.classes == data.shape().classes, "model ", model.name(), " has ", loss_.classes,
             " outputs but dataset ", data.shape().name, " has ", data.shape().classes, " classes");
  const Shape in = model.input_shape();
  DTNN_CHECK(in.numel() == data.shape().h * data.shape().w * data.shape().c, "model ", model.name(),
             " expects inputs of shape ", in.str(), ", dataset ", data.shape().name, " has ", data.shape().h, "x",
             data.shape().w, "x", data.shape().c);
  const size_t last = model.num_layers() - 1;
  loss_.fused_softmax = loss_.loss == LossKind::categorical_cross_entropy && model.layer(last).type() == "Softmax" &&
                        model.num_layers() >= 3;
  top_ = loss_.fused_softmax ? last - 1 : last;
  const int64_t rank_batch = options.model_averaging != "none"
                                 ? global_batch_
                                 : largest_rank_batch(global_batch_, parse_batch_shares(options.rank_batch_shares),
                                                      comm.size(), comm.rank());
  DTNN_CHECK(rank_batch <= model.max_batch(), "a global batch of ", global_batch_, " over ", comm.size(),
             " ranks needs per-rank buffers of ", rank_batch, " samples here; the model was built for ", model.max_batch());
  batch_indices_.resize(model.max_batch());
  eval_sums_.resize(2 + loss_.metrics.size());
  sums_.resize(1 + loss_.metrics.size());
  means_.resize(sums_.size());
  for (size_t i = 0; i < model.num_layers(); ++i) every_rank_steps_ |= communicates_in_step(model.layer(i));
  every_rank_steps_ &= comm.size() > 1;
  dist_ = make_distribution(options, comm, model, optimizer, reduce_tail_floats(options), every_rank_steps_);
  if (const Straggler s = parse_straggler(options.straggler_ms); s.rank == comm.rank()) straggler_ms_ = s.ms;
  if (const SlowRank s = parse_slow_rank(options.straggler_factor); s.rank == comm.rank()) slow_factor_ = s.factor;
  device_ = make_step_device(model, loss_, loader_);
  tail_ = model.reduce_tail();
}

void Trainer::set_tracer(Tracer* tracer) {
  tracer_ = tracer;
  dist_->set_tracer(tracer, device_->set_tracer(tracer));
}

std::vector<std::string> Trainer::value_names() const {
  std::vector<std::string> names{loss_name(loss_.loss)};
  for (MetricKind m : loss_.metrics) names.push_back(metric_name(m));
  return names;
}

void Trainer::local_share(const Communicator& comm, int64_t global, int64_t* offset, int64_t* count) const {
  if (&comm == &comm_) shares_.split(global, offset, count);
  else split_batch(global, {}, comm.size(), comm.rank(), offset, count);
}

// The last global batch may be short. When layers communicate inside the step, a rank with no samples would
// miss their collectives (a hang), so a last batch smaller than the rank count takes one sample per rank, the
// extra ones wrapping to the start of the walk's order.
int64_t Trainer::global_count(const SampleWalk& walk, int64_t step) const {
  const int64_t n = std::min(global_batch_, walk.total - step * global_batch_);
  return every_rank_steps_ ? std::max<int64_t>(n, comm_.size()) : n;
}

void Trainer::submit(const SampleWalk& walk, int64_t step, int epoch) {
  const int64_t start = step * global_batch_;
  int64_t offset = 0, n = global_count(walk, step);
  if (dist_->figures() == EpochFigures::global) local_share(comm_, n, &offset, &n);  // else every rank's steps are its own
  for (int64_t i = 0; i < n; ++i) batch_indices_[i] = walk.order[(start + offset + i) % walk.count];
  loader_.submit(Pool::train, batch_indices_.data(), n, options_.flip_images || options_.crop_images, epoch);
}

Batch Trainer::next_batch() {
  const double t0 = tracer_ ? now_s() : 0.0;
  const Batch batch = loader_.wait();
  if (tracer_) {
    tracer_->set_step(steps_run_);
    tracer_->add(TraceKind::data_wait, -1, t0, now_s(), 0, static_cast<uint8_t>(device_->wait_lane()));
  }
  return batch;
}

// Deliberate slowness: a fixed sleep (--straggler_ms), or F - 1 times the last step's compute
// (--straggler_factor: a slower device, whose delay follows its share of the batch). Traced, the delay is
// part of the step: the rank is busy as a slower device would be, and the stragglers table (busy = step +
// data wait - exposed) sees it. Returns when the step began (read only when measuring shares or tracing).
double Trainer::straggle() {
  const double began = shares_.measuring() || tracer_ ? now_s() : 0.0;
  if (straggler_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(straggler_ms_));
  if (slow_factor_ > 1.0 && last_compute_s_ > 0.0)
    std::this_thread::sleep_for(std::chrono::duration<double>((slow_factor_ - 1.0) * last_compute_s_));
  return began;
}

void Trainer::train_step(const Batch& batch, int64_t global_n, double began) {
  device_->begin_step(steps_run_);
  dist_->begin_step();
  if (batch.count > 0) {
    device_->load(batch);
    model_.forward(batch.count, Mode::train);
    device_->loss(batch.count, global_n, tail_);
    model_.backward(batch.count, top_, dist_->hook());
  } else {
    device_->no_samples(tail_);
  }
  dist_->finish_step(optimizer_, model_.param_slab());
  device_->end_step(tail_, global_n, began);
}

// walk.steps global batches over walk.order[0, walk.count) (cycled): this rank's share of each.
void Trainer::train_walk(const SampleWalk& walk, int epoch, const Pass& pass) {
  loader_.reset();
  if (walk.steps > 0) submit(walk, 0, epoch);
  for (int64_t step = 0; step < walk.steps; ++step) {
    const Batch batch = next_batch();
    if (step + 1 < walk.steps) {
      if (step > 0) device_->before_refill();  // the slot submit() refills held the previous step's batch
      submit(walk, step + 1, epoch);           // decoded while this step computes
    }
    if (batch_begin_) batch_begin_();
    const double began = straggle();
    const double slept = shares_.measuring() ? now_s() - began : 0.0;
    const double compute_t0 = dist_->times().compute_s;
    train_step(batch, global_count(walk, step), began);
    if (shares_.measuring()) dist_->read_pending();  // this step's device time, not two ago
    last_compute_s_ = dist_->times().compute_s - compute_t0;
    shares_.after_step(comm_, last_compute_s_ + slept, batch.count);
    dist_->after_update();
    ++steps_run_;
    if (!progress_) continue;
    device_->means((step + 1) % kProgressEvery == 0 || step + 1 == walk.steps, means_);
    progress_(pass.label, device_->done(), pass.shown, now_s() - pass.t0, means_, false);
  }
}

EpochRecord Trainer::run_epoch(int epoch, int num_epochs, const Splits& splits) {
  EpochRecord rec;
  rec.epoch = epoch;
  shuffle_rng_ = epoch_rng(options_.seed, epoch);
  model_.seed_layers(epoch_seed(options_.seed, epoch), comm_.rank());
  schedule_.begin_epoch(epoch, num_epochs, splits.train, shuffle_rng_);
  const Pass pass{"Epoch " + std::to_string(epoch) + "/" + std::to_string(num_epochs), schedule_.shown(), now_s()};
  device_->begin_pass();
  dist_->reset_times();
  SampleWalk walk;  // one walk, or (dynamic blocks) one per block this rank claims until none is left
  while (schedule_.next(epoch, &walk)) {
    train_walk(walk, epoch, pass);
    if (schedule_.dynamic()) dist_->end_block();
  }
  finish_epoch(rec, num_epochs, pass);
  if (!splits.val.empty()) validate(rec, splits);
  return rec;
}

// The epoch's figures: merges first (the first collective after the loop is where the ranks wait for the
// slowest, and that wait belongs to the merge), then its sums, time and communication over the ranks the
// strategy's figures cover.
void Trainer::finish_epoch(EpochRecord& rec, int num_epochs, const Pass& pass) {
  int64_t done = 0;
  device_->totals(sums_, &done);
  rec.averaging = dist_->end_epoch(rec.epoch, rec.epoch == num_epochs, sums_, &done);
  const EpochFigures figures = dist_->figures();
  rec.train.time_s = (figures == EpochFigures::own ? *solo_ : comm_).max(now_s() - pass.t0);
  rec.comm = dist_->gather_epoch();
  rec.learning_rate = optimizer_.learning_rate();
  rec.train.samples = done;
  rec.train.values.resize(sums_.size());
  for (size_t v = 0; v < sums_.size(); ++v) rec.train.values[v] = done ? sums_[v] / static_cast<double>(done) : 0.0;
  // Sums over the ranks at the end: every rank ran the planned walk of its own; the last line counts them all.
  const int64_t shown = figures == EpochFigures::summed_at_end ? schedule_.planned_total() * comm_.size() : pass.shown;
  if (progress_) progress_(pass.label, done, shown, rec.train.time_s, rec.train.values, true);
}

void Trainer::validate(EpochRecord& rec, const Splits& splits) {
  const EpochFigures figures = dist_->figures();
  if (figures == EpochFigures::own) {
    // A rank other than 0 would validate alone for figures nobody reports, and a straggler would spend that
    // time too; so only rank 0 does, unless this rank's schedulers read them.
    if (comm_.rank() == 0 || validate_every_rank_) rec.val = evaluate_on(*solo_, splits.val_pool, splits.val, "");
    return;
  }
  if (figures == EpochFigures::global || comm_.size() == 1 || dist_->ranks_agree()) {
    rec.val = evaluate_on(comm_, splits.val_pool, splits.val, "");
    return;
  }
  // The ranks hold different models, and a validation pass sharded over them would score no model at all.
  // Rank 0's model, over the whole validation set; its figures go to every rank, whose schedulers must take
  // the same decisions.
  PassResult v;
  if (comm_.rank() == 0) v = evaluate_on(*solo_, splits.val_pool, splits.val, "");
  double head[2] = {static_cast<double>(v.samples), v.time_s};
  comm_.broadcast_bytes(head, sizeof head, 0);
  v.values.resize(loss_.metrics.size() + 1);
  comm_.broadcast_bytes(v.values.data(), static_cast<int64_t>(v.values.size() * sizeof(double)), 0);
  v.samples = static_cast<int64_t>(head[0]);
  v.time_s = head[1];
  rec.val = std::move(v);
}

std::optional<AveragingStats> Trainer::finish_training() {
  std::optional<AveragingStats> stats = dist_->end_training();
  if (std::vector<int64_t> blocks = schedule_.finish(); !blocks.empty() && stats)
    stats->blocks_per_rank = blocks;  // collective
  return stats;
}

PassResult Trainer::evaluate(Pool pool, const std::vector<int64_t>& indices, const std::string& label) {
  return evaluate_on(comm_, pool, indices, label);
}

PassResult Trainer::evaluate_on(Communicator& comm, Pool pool, const std::vector<int64_t>& indices,
                                const std::string& label) {
  const int64_t total = static_cast<int64_t>(indices.size());
  const int64_t batches = (total + global_batch_ - 1) / global_batch_;
  auto submit = [&](int64_t k) {  // this rank's share of batch k (never augmented), to the loader
    const int64_t start = k * global_batch_;
    int64_t offset, n;
    local_share(comm, std::min(global_batch_, total - start), &offset, &n);
    for (int64_t i = 0; i < n; ++i) batch_indices_[i] = indices[start + offset + i];
    loader_.submit(pool, batch_indices_.data(), n, false, 0);
  };
  device_->begin_pass();
  // One event for the pass, not one per layer and batch (the buffer is sized for steps); per-layer times
  // are the training steps': evaluation forwards (no backward, other batch sizes) would pull the reported
  // forward times toward a different workload.
  device_->pause_layer_tracing();
  struct TimingOff {
    Model& m;
    const bool was;
    explicit TimingOff(Model& model) : m(model), was(model.time_layers()) { m.set_time_layers(false); }
    ~TimingOff() { m.set_time_layers(was); }
  } timing_off(model_);
  const double t0 = now_s();
  loader_.reset();
  if (batches > 0) submit(0);
  for (int64_t k = 0; k < batches; ++k) {
    const Batch batch = loader_.wait();
    if (k + 1 < batches) {
      if (k > 0) device_->before_refill();
      submit(k + 1);
    }
    if (batch.count == 0) continue;
    device_->load(batch);
    model_.forward(batch.count, Mode::evaluate);
    device_->add_evaluation(batch);
    if (progress_ && !label.empty() && comm.size() == 1 && device_->means(false, means_))
      progress_(label, device_->done(), total, now_s() - t0, means_, false);
  }
  int64_t count = 0;
  device_->totals(sums_, &count);
  for (size_t v = 0; v < sums_.size(); ++v) eval_sums_[v] = static_cast<float>(sums_[v]);
  eval_sums_[sums_.size()] = static_cast<float>(count);
  comm.allreduce_sum(eval_sums_.data(), static_cast<int64_t>(eval_sums_.size()));
  if (tracer_) {
    tracer_->set_step(-1);
    tracer_->add(TraceKind::evaluate, -1, t0, now_s());
  }
  device_->resume_layer_tracing();
  PassResult result;
  result.time_s = comm.max(now_s() - t0);
  result.samples = static_cast<int64_t>(eval_sums_[sums_.size()]);
  for (size_t v = 0; v < sums_.size(); ++v)
    result.values.push_back(result.samples ? eval_sums_[v] / static_cast<double>(result.samples) : 0.0);
  if (progress_ && !label.empty()) progress_(label, result.samples, total, result.time_s, result.values, true);
  return result;
}

}  // namespace dtnn
