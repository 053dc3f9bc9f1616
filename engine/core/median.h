// The median of a sample: what dtnn reports for every timing and compares across runs.
#pragma once

#include <vector>

namespace dtnn {

// The middle value; for an even count the mean of the two middle values. Throws dtnn::Error on an empty
// sample or one containing a NaN (a NaN has no place in an ordering).
double median(std::vector<double> v);

}  // namespace dtnn
