// --profile=True: the per-phase summary of a run's training, from the tracer's events (trace/tracer.h).
// Per phase (step, data wait, forward, loss, backward, communication calls, in flight, wait, allreduce,
// update, evaluate; the layers of a phase summed), then per operation of the convolution algorithms (PyDTNN's
// operation names, forward_im2col, forward_matmul, ...: time inside forward and backward, not added to them):
// rank 0's calls, total and median seconds per call, and the total's minimum, median and maximum over the
// ranks, so a straggling rank shows.
#pragma once

#include <ostream>

#include "parallel/communicator.h"
#include "trace/tracer.h"

namespace dtnn {

// Collective; rank 0 prints.
void print_profile(std::ostream& out, const Tracer& tracer, Communicator& comm);

}  // namespace dtnn
