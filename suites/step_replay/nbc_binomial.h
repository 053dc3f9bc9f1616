// An in-place MPI_Iallreduce (float sum) built from point-to-point messages the way Open MPI 4.1's libnbc
// schedules it, for the replay proxy under SimGrid.
//
// Why: the trainer sums its buckets with MPI_Iallreduce(MPI_IN_PLACE, ...), and Open MPI 4.1's libnbc
// (ompi/mca/coll/libnbc/nbc_iallreduce.c) picks its binomial schedule for every in-place call whatever the
// size or rank count (`p < 4 || size*count < 65536 || !commutative || inplace`): a binomial-tree reduce to rank 0
// followed by a binomial broadcast (allred_sched_diss), 2 ceil(log2 p) message rounds of the whole bucket on
// the critical path. SimGrid 3.32's own MPI_Iallreduce (smpi_nbc_impl.cpp) instead sends the whole buffer from
// every rank to every other rank at once, p - 1 copies per rank, which for 64 ranks is nothing like what
// Open MPI does. So the proxy can replay libnbc's schedule itself (--nbc binomial, the default under SimGrid)
// and still compare with SimGrid's (--nbc mpi).
//
// Progress follows libnbc: a schedule is a list of rounds; starting a round posts its sends and receives and
// runs its copies and sums at once; a round is over when all its requests are; each progress call moves a
// schedule on by at most one round (NBC_Progress), and progress happens only inside MPI calls made by the
// trainer (Open MPI 4.1 has no progress thread): an MPI_Test of the oldest bucket progresses every active
// schedule (opal_progress runs libnbc's progress over all of them), MPI_Wait spins that until its bucket is
// done. Rounds of only local work (a copy or a sum) therefore cost one progress call, as in libnbc.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace step_replay {

class BinomialAllreduce {
 public:
  // Buffers: the bucket's own floats (in place) and a scratch copy of the same size.
  enum Buf { kData = 0, kTmp = 1 };
  struct Item {
    enum Kind { send, recv, copy, sum } kind;
    int peer;       // send / recv
    Buf a, b;       // send/recv: a; copy: a -> b; sum: b = a + b (ompi_op_reduce's order)
  };
  using Round = std::vector<Item>;

  // libnbc's allred_sched_diss for rank `rank` of `p`, root 0, in place. Public so that tests can check the
  // rounds; the schedule does not depend on the size.
  static std::vector<Round> schedule(int rank, int p) {
    std::vector<Round> rounds(1);
    auto barrier = [&] { rounds.emplace_back(); };
    int maxr = 0;
    while ((1 << maxr) < p) ++maxr;
    const int vrank = rank;  // root 0: virtual ranks are the ranks
    Buf lbuf = kData, rbuf = kTmp;
    if (maxr % 2 == 1) {  // so that the sum ends in the data buffer on rank 0
      lbuf = kTmp;
      rbuf = kData;
      rounds.back().push_back({Item::copy, -1, kData, kTmp});
      barrier();
    }
    for (int r = 1; r <= maxr; ++r) {
      if (vrank % (1 << r) == 0) {
        const int peer = vrank + (1 << (r - 1));
        if (peer < p) {
          rounds.back().push_back({Item::recv, peer, rbuf, rbuf});
          barrier();
          rounds.back().push_back({Item::sum, -1, lbuf, rbuf});
          barrier();
          std::swap(lbuf, rbuf);
        }
      } else {
        rounds.back().push_back({Item::send, vrank - (1 << (r - 1)), lbuf, lbuf});
        break;  // leaves the reduction
      }
    }
    if (vrank != 0) {
      for (int r = 0; r < maxr; ++r)
        if (vrank >= (1 << r) && vrank < (1 << (r + 1))) rounds.back().push_back({Item::recv, vrank - (1 << r), kData, kData});
      barrier();
    }
    for (int r = 0; r < maxr; ++r)
      if ((vrank + (1 << r) < p && vrank < (1 << r)) || vrank == 0)
        rounds.back().push_back({Item::send, vrank + (1 << r), kData, kData});
    while (!rounds.empty() && rounds.back().empty()) rounds.pop_back();
    return rounds;
  }

  BinomialAllreduce(int rank, int p, MPI_Comm comm) : rounds_(schedule(rank, p)), comm_(comm) {}

  // Starts the sum of `data` (n floats) using `tmp` (n floats) as scratch; tag keeps concurrent buckets apart.
  void start(float* data, float* tmp, int n, int tag) {
    bufs_[kData] = data;
    bufs_[kTmp] = tmp;
    n_ = n;
    tag_ = tag;
    round_ = 0;
    done_ = rounds_.empty();
    if (!done_) start_round();
  }

  bool done() const { return done_; }
  size_t round() const { return round_; }

  // One libnbc progress step: if the current round is over, start the next one. Returns done().
  bool progress() {
    if (done_) return true;
    int flag = 1;
    if (!requests_.empty()) MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE);
    if (!flag) return false;
    requests_.clear();
    if (++round_ == rounds_.size()) {
      done_ = true;
    } else {
      start_round();
    }
    return done_;
  }

  // The requests still pending in the current round (MPI_REQUEST_NULL once complete): a waiter blocks on these.
  std::vector<MPI_Request>& pending() { return requests_; }

 private:
  void start_round() {
    for (const Item& it : rounds_[round_]) {
      switch (it.kind) {
        case Item::send:
          requests_.emplace_back();
          MPI_Isend(bufs_[it.a], n_, MPI_FLOAT, it.peer, tag_, comm_, &requests_.back());
          break;
        case Item::recv:
          requests_.emplace_back();
          MPI_Irecv(bufs_[it.a], n_, MPI_FLOAT, it.peer, tag_, comm_, &requests_.back());
          break;
        // Local work is skipped under SimGrid: its time is not simulated (only the profile's compute is) and
        // every rank's buffers are one shared allocation there (SMPI_SHARED_MALLOC), so the sums mean nothing.
        case Item::copy:
#ifndef DTNN_STEP_REPLAY_SMPI
          if (bufs_[it.a] != bufs_[it.b]) std::memcpy(bufs_[it.b], bufs_[it.a], sizeof(float) * static_cast<size_t>(n_));
#endif
          break;
        case Item::sum: {
#ifndef DTNN_STEP_REPLAY_SMPI
          const float* a = bufs_[it.a];
          float* b = bufs_[it.b];
          if (a != b)
            for (int i = 0; i < n_; ++i) b[i] += a[i];
#endif
          break;
        }
      }
    }
  }

  std::vector<Round> rounds_;
  MPI_Comm comm_;
  float* bufs_[2] = {nullptr, nullptr};
  int n_ = 0, tag_ = 0;
  size_t round_ = 0;
  bool done_ = true;
  std::vector<MPI_Request> requests_;
};

}  // namespace step_replay
