// Temporary files a stop signal must not leave behind. AtomicFile writes `<target>.tmp.<pid>` and renames it
// into place; a SIGTERM or SIGINT in between (a scheduler's preemption, the runner's timeout, Ctrl-C) left
// the partial file for ever, one more per run (a sweep found 78 MB ones beside each timed-out trial).
#pragma once

#include <string>

namespace dtnn {

// Records a temporary file to remove if a stop signal ends the process; returns its slot, or -1 when none
// is free or the path is too long (then it is not removed on a signal, nothing else changes). Slots are
// fixed (no allocation in the signal handler), enough for the files one command writes at once.
int register_temp_file(const std::string& path);
// Forgets a slot (the file was renamed or removed); -1 is ignored.
void unregister_temp_file(int slot);

// From now on SIGTERM, SIGINT and SIGHUP, where their action is still the default, first remove the
// registered files, then end the process as the signal would have (the exit status still says which).
// A signal the process ignores or handles itself is left alone.
void remove_temp_files_on_stop_signals();

}  // namespace dtnn
