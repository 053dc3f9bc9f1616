// The ranks of a job agree on the model they train. See rank_agreement.h.
#include "train/rank_agreement.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "train/batch_shares.h"

namespace dtnn {

void check_ranks_agree(Communicator& comm, const Model& model, const TrainOptions& o) {
  if (comm.size() == 1) return;
  constexpr int kFields = 6;
  const char* names[kFields] = {"parameters", "state values", "tensor format", "layers", "global batch",
                                "batch shares (fingerprint)"};
  // Shares too: ranks splitting by different weights would train some samples twice and others never, and
  // one rank measuring for auto alone would pair its allreduce with another rank's gradient sum.
  const int64_t global = global_batch(o, comm.size());
  const std::string shares = o.model_averaging == "none" ? o.rank_batch_shares : "";
  const int64_t mine[kFields] = {model.slab_size(), model.state_size(), static_cast<int64_t>(model.layout()),
                                 static_cast<int64_t>(model.num_layers()), global,
                                 static_cast<int64_t>(shares_fingerprint(shares, comm.size()))};
  int64_t root[kFields];
  std::memcpy(root, mine, sizeof mine);
  comm.broadcast_bytes(root, sizeof root, 0);
  std::string why;
  for (int i = 0; i < kFields; ++i) {
    if (mine[i] == root[i]) continue;
    const bool layout = i == 2;
    why += std::string(why.empty() ? "" : "; ") + names[i] + " " +
           (layout ? layout_name(static_cast<Layout>(mine[i])) : std::to_string(mine[i])) + " where rank 0 has " +
           (layout ? layout_name(static_cast<Layout>(root[i])) : std::to_string(root[i]));
  }
  float differing = why.empty() ? 0.0f : 1.0f;
  comm.allreduce_sum(&differing, 1);
  DTNN_CHECK(why.empty(), "rank ", comm.rank(), " built another model than rank 0: ", why,
             " (every rank needs the same --model, --tensor_format, batch and --rank_batch_shares options)");
  DTNN_CHECK(differing == 0.0f, static_cast<int>(differing), " rank", differing == 1.0f ? "" : "s",
             " built another model than rank 0 (every rank needs the same --model, --tensor_format, batch and "
             "--rank_batch_shares options)");
}

}  // namespace dtnn
