// The name of the machine this process runs on.
#pragma once

#include <string>

namespace dtnn {

// gethostname(), or "unknown" when the system will not say.
std::string host_name();

}  // namespace dtnn
