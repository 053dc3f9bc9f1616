#include "parallel/distribution.h"

#include "parallel/gpu_gradient_reducer.h"
#include "parallel/gradient_reducer.h"
#include "parallel/model_averaging.h"
#include "train/options.h"

namespace dtnn {

std::unique_ptr<Distribution> make_distribution(const TrainOptions& o, Communicator& comm, Model& model,
                                                Optimizer& optimizer, int64_t tail, bool layers_communicate) {
  if (o.model_averaging != "none") return std::make_unique<ModelAveraging>(o, comm, model, optimizer, tail);
  if (model.device() == Device::gpu) {
    comm.reserve_device_staging(model.slab_size() + tail);
    return std::make_unique<GpuGradientReducer>(comm, model, tail, o.non_blocking_mpi, o.gradient_bucket_mb,
                                                o.gradient_buckets_min, layers_communicate);
  }
  return std::make_unique<GradientReducer>(comm, model, tail, o.non_blocking_mpi, o.gradient_bucket_mb,
                                           o.gradient_buckets_min, o.allreduce_dtype == "bfloat16");
}

}  // namespace dtnn
