// `dtnn ingest`'s writes: convolution, MPI collective and named benchmark rows and contention ceilings, all in
// one transaction.
// See store.h.
#include <sqlite3.h>

#include "results/sqlite_util.h"
#include "results/store.h"

namespace dtnn {

using namespace store_detail;

ResultStore::StoredRows ResultStore::add_benchmarks(int64_t environment_id, const std::vector<ConvBenchmarkRow>& conv,
                                                    const std::vector<CollectiveBenchmarkRow>& collectives,
                                                    const std::vector<NamedBenchmarkRow>& named,
                                                    const std::vector<ContentionCeilingRow>& ceilings) {
  StoredRows stored;
  Transaction tx(db_, path_);
  for (const ConvBenchmarkRow& r : conv) stored.conv.push_back(insert_conv_benchmark(environment_id, r));
  for (const CollectiveBenchmarkRow& r : collectives)
    stored.collectives.push_back(insert_collective_benchmark(environment_id, r));
  for (const NamedBenchmarkRow& r : named) stored.named.push_back(insert_named_benchmark(environment_id, r));
  for (const ContentionCeilingRow& r : ceilings) stored.ceilings.push_back(insert_contention_ceiling(environment_id, r));
  tx.commit();
  return stored;
}

bool ResultStore::insert_collective_benchmark(int64_t environment_id, const CollectiveBenchmarkRow& r) {
  // As for conv rows: an equal row but for the file's spelling is the same file ingested again, skipped.
  Statement st(db_, path_,
               "INSERT INTO collective_benchmarks (environment_id, file, op, bytes, ranks, transport, mpi_library, "
               "repetitions, time_s, time_min_s, time_max_s, time_stddev_s, bytes_per_s, bus_bytes_per_s) "
               "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14 WHERE NOT EXISTS ("
               "SELECT 1 FROM collective_benchmarks WHERE environment_id = ?1 AND op = ?3 AND bytes = ?4 AND "
               "ranks = ?5 AND transport = ?6 AND mpi_library = ?7 AND repetitions = ?8 AND time_s = ?9 AND "
               "time_min_s IS ?10 AND time_max_s IS ?11 AND time_stddev_s IS ?12)");
  st.bind(1, environment_id).bind(2, r.file).bind(3, r.op).bind(4, r.bytes).bind(5, r.ranks);
  st.bind(6, r.transport).bind(7, r.mpi_library).bind(8, r.repetitions).bind(9, r.time_s);
  st.bind(10, r.time_min_s).bind(11, r.time_max_s).bind(12, r.time_stddev_s);
  st.bind(13, r.bytes_per_s).bind(14, r.bus_bytes_per_s);
  st.run();
  return sqlite3_changes(db_) == 1;
}

bool ResultStore::insert_named_benchmark(int64_t environment_id, const NamedBenchmarkRow& r) {
  Statement st(db_, path_,
               "INSERT INTO named_benchmarks (environment_id, source, file, executable, name, threads, repetitions, "
               "iterations, real_time_ms, cpu_time_ms, real_min_ms, real_max_ms, real_stddev_ms, items_per_s, "
               "bytes_per_s, counters, label, error) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
               "?15, ?16, ?17, ?18 WHERE NOT EXISTS (SELECT 1 FROM named_benchmarks WHERE environment_id = ?1 AND "
               "source = ?2 AND executable = ?4 AND name = ?5 AND threads = ?6 AND repetitions = ?7 AND iterations IS ?8 "
               "AND real_time_ms IS ?9 AND cpu_time_ms IS ?10 AND real_min_ms IS ?11 AND real_max_ms IS ?12 AND "
               "real_stddev_ms IS ?13 AND counters = ?16 AND error IS ?18)");
  st.bind(1, environment_id).bind(2, r.source).bind(3, r.file).bind(4, r.executable).bind(5, r.name);
  st.bind(6, r.threads).bind(7, r.repetitions).bind(8, r.iterations).bind(9, r.real_time_ms).bind(10, r.cpu_time_ms);
  st.bind(11, r.real_min_ms).bind(12, r.real_max_ms).bind(13, r.real_stddev_ms).bind(14, r.items_per_s);
  st.bind(15, r.bytes_per_s).bind(16, r.counters).bind(17, r.label);
  st.bind(18, r.error.empty() ? std::optional<std::string>() : std::optional<std::string>(r.error));
  st.run();
  return sqlite3_changes(db_) == 1;
}

bool ResultStore::insert_contention_ceiling(int64_t environment_id, const ContentionCeilingRow& r) {
  Statement st(db_, path_,
               "INSERT OR IGNORE INTO contention_ceilings (environment_id, machine_key, model, dataset, ranks, ceiling, "
               "alone_samples_per_s, independent_samples_per_s, data_parallel_samples_per_s, rounds, epochs, "
               "dtnn_commit, measured_at, file, step_jitter) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
               "?13, ?14, ?15)");
  st.bind(1, environment_id).bind(2, r.machine_key).bind(3, r.model).bind(4, r.dataset).bind(5, r.ranks);
  st.bind(6, r.ceiling).bind(7, r.alone_samples_per_s).bind(8, r.independent_samples_per_s);
  st.bind(9, r.data_parallel_samples_per_s).bind(10, r.rounds).bind(11, r.epochs).bind(12, r.dtnn_commit);
  st.bind(13, r.measured_at).bind(14, r.file).bind(15, r.step_jitter);
  st.run();
  return sqlite3_changes(db_) == 1;
}

}  // namespace dtnn
