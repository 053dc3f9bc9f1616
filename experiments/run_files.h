// Where a run's log and report live, and which report a run may read (experiments/run_files.cpp). A
// benchmarking suite's worst failure is a wrong number stored as a good one, so: each database has its own
// log folder, each attempt its own file names and nonce, nothing is at a report path when its attempt
// starts, and a report is read only if it was written after its attempt began and names that attempt.
#pragma once

#include <time.h>

#include <filesystem>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

// This database's own log folder: <db dir>/logs/<db file stem>-<8 hex digits of the SHA-256 of its
// canonical path>. Databases in one directory each count run ids from 1 and must not share files.
std::filesystem::path database_log_dir(const std::filesystem::path& db_path);
// A fresh name for one attempt at a run (64 random bits, 16 hex digits), used in its file names and in
// $DTNN_RUN_NONCE, which the trial copies into its report as "run_nonce".
std::string attempt_nonce();
// Where the trial logged at `log_path` (<name>.log) writes its report: <name>.report.json.
std::string report_path_for(const std::string& log_path);
// Why the file at report_path is not this attempt's report ("" when it is, and when there is none).
std::string refused_report_reason(const std::string& report_path, const std::string& nonce, const timespec& began);
// Deletes reports no trial will read any more: next to the logs of `orphans`, and old ones under `log_root`.
void remove_stale_reports(const std::vector<std::string>& orphans, const std::filesystem::path& log_root,
                          const ResultStore& store);
// Nothing may be at a report path before its attempt begins: removes what is there, throws if it cannot.
void clear_report_path(const std::string& report_path);
// Whether a traced run's report says its trace files were written: dtnn train warns and goes on when it cannot
// write them (its "trace.write_error"), and the store must then name no trace file for the run (a missing one,
// or an older run's at that path).
bool trace_written(const std::string& report_json);
// "" when the report at report_path ran the trial's world: its rank count, and under srun with a layout its hosts
// (node count, at most ranks_per_node each); else why not. An unreadable report gives "" (the store says why).
struct RankLayout;
std::string world_mismatch(const std::string& report_path, const RankLayout& layout, bool srun);

// The files a trial's own options name for it to write (--weights_and_bias_filename, --history_file,
// --checkpoint_file, --early_stopping_weights_filename) are shared by every run of a matrix that sets them
// once: a second repeat would start from the first one's trained weights and overwrite its files, and both
// would be stored as independent runs. So each attempt writes its own, beside its log:
// <log base>.<option><extension of the given path>. A weights file that exists when the attempt starts is
// PyDTNN's "start from these weights": it is copied to the attempt's file, which the run then loads and
// replaces with its trained weights; the given file is never written. Rewrites those arguments of argv in
// place and returns one "# ..." log line per rewritten option (none when the trial sets none).
std::vector<std::string> give_attempt_own_files(std::vector<std::string>& argv, const std::string& log_path);

}  // namespace dtnn
