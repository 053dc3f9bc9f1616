// The name of the machine this process runs on, and the output of a shell command run on it.
#pragma once

#include <string>

namespace dtnn {

// gethostname(), or "unknown" when the system will not say.
std::string host_name();

// The standard output of `sh -c cmd` (popen), trailing newlines removed; "" if it cannot be started. The
// caller quotes arguments (core/strings.h shell_quote) and bounds the time (timeout(1)) where it matters.
std::string capture_command(const std::string& cmd);

}  // namespace dtnn
