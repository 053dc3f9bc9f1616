// Built instead of nccl_communicator.cu without CUDA.
#include "core/error.h"
#include "parallel/communicator.h"

namespace dtnn {

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&) {
  unsupported("--enable_nccl: this dtnn was built without CUDA and NCCL");
}

}  // namespace dtnn
