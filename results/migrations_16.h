// Migration 16 of the results store (results/migrations.h lists them all): the runner's process identity beside
// its pid. Released text is never edited.
#pragma once

namespace dtnn::schema {

// A 'running' run whose runner is gone is marked interrupted (ResultStore::reap_orphaned_runs) and shown as
// 'running (runner gone)'. Host and pid alone kept such a run 'running' as long as any process reused the pid
// -- in a container, whose pids start small again, the next job's processes. runner_start is
// "<boot id> <start time in clock ticks since boot>" (/proc/sys/kernel/random/boot_id, /proc/PID/stat field 22)
// of the runner process: a process with that pid and another start is not the runner. '' = not recorded
// (runs stored before, or where /proc cannot be read): host and pid alone, as before.
inline constexpr const char* kMigration16Sql = R"SQL(
ALTER TABLE runs ADD COLUMN runner_start TEXT NOT NULL DEFAULT '';
)SQL";

}  // namespace dtnn::schema
