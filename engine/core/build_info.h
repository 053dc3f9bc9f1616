// The binary's own provenance, compiled in when it is built (engine/core/build_info.cmake regenerates it at
// every build): the git commit of the source tree it was built from, whether that tree had changes
// (tracked or untracked files outside .gitignore), and the build flags. Run reports and the results store
// take the commit from here, not from whatever tree the binary happens to run in.
#pragma once

#include <string>

namespace dtnn {

struct BuildInfo {
  std::string commit;  // 40 hex digits, or "unknown" (no git, or not a checkout)
  bool dirty = false;  // the tree had changes when this binary was built
  std::string flags;   // compiler, build type, compile flags, ISA flags, backends
};

const BuildInfo& build_info();

// "abc123…(40)" or "abc123…+dirty": the commit as the store's views show it.
std::string build_commit_label();

}  // namespace dtnn
