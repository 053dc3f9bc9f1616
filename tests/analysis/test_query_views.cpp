// `dtnn query vs_pytorch` and `dtnn query layers` on planted runs whose right answer is known: each row
// compares or averages only runs of one configuration (a review found dtnn averaged over batch sizes against
// one arbitrary PyTorch batch, PyTorch over thread counts, weak with strong scaling, and CPU with GPU layer
// times under one run's labels).
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "analysis/query.h"
#include "results/store_test_helpers.h"

namespace {

using Fixture = dtnn::test::RunFixture;

// An ok run of `framework` at `samples_per_s`; `params` beside the fixture's (model simplemlp).
int64_t ok_run(Fixture& f, const std::string& key, int ranks, double samples_per_s,
               std::map<std::string, std::string> params) {
  const int64_t id = f.begin(key, ranks, params);
  f.store.exec("UPDATE runs SET status = 'ok', samples_per_s = " + std::to_string(samples_per_s) +
               ", test_accuracy = 50 WHERE id = " + std::to_string(id));
  return id;
}

// The rows of a named query as "col=value ..." strings of the given columns.
std::vector<std::string> rows(const dtnn::ResultStore& store, const std::string& view,
                              const std::vector<std::string>& columns) {
  const dtnn::QueryResult r = store.query(dtnn::query_sql(view));
  std::vector<std::string> out;
  for (const auto& row : r.rows) {
    std::string line;
    for (const std::string& c : columns)
      for (size_t i = 0; i < r.columns.size(); ++i)
        if (r.columns[i] == c) line += (line.empty() ? "" : " ") + c + "=" + row[i].value_or("NULL");
    out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("query: vs_pytorch compares one batch, device, thread count and scaling mode at a time", "[query]") {
  Fixture f("vs_pytorch");
  // Two batches, dtnn twice PyTorch's speed at each (it showed one row, 3000 vs 500: 6.0).
  for (const auto& [batch, dtnn, torch] : {std::tuple{"32", 1000.0, 500.0}, std::tuple{"256", 5000.0, 2500.0}}) {
    ok_run(f, std::string("d") + batch, 1, dtnn, {{"batch_size", batch}, {"dataset", "mnist"}, {"threads", "1"}});
    ok_run(f, std::string("t") + batch, 1, torch,
           {{"framework", "pytorch"}, {"batch_size", batch}, {"dataset", "mnist"}, {"threads", "1"}});
  }
  // PyTorch at 1 and at 8 threads: dtnn at 1 thread meets the 1-thread one only (it met their mean, 0.5).
  ok_run(f, "d1", 1, 1000, {{"batch_size", "64"}, {"dataset", "cifar10"}, {"threads", "1"}});
  ok_run(f, "t1", 1, 500, {{"framework", "pytorch"}, {"batch_size", "64"}, {"dataset", "cifar10"}, {"threads", "1"}});
  ok_run(f, "t8", 1, 3500, {{"framework", "pytorch"}, {"batch_size", "64"}, {"dataset", "cifar10"}, {"threads", "8"}});
  // Weak (64 per rank) and strong (64 in all) on 4 ranks: two rows, not their mean (2.75).
  ok_run(f, "weak", 4, 4000, {{"batch_size", "64"}, {"dataset", "imagenet"}});
  ok_run(f, "strong", 4, 1500, {{"batch_size", "64"}, {"dataset", "imagenet"}, {"scaling", "strong"}});
  ok_run(f, "torch", 1, 1000, {{"framework", "pytorch"}, {"batch_size", "64"}, {"dataset", "imagenet"}});
  // A run that trained nothing has no samples/s and stays out.
  ok_run(f, "none", 1, 0, {{"batch_size", "64"}, {"dataset", "imagenet"}, {"num_epochs", "0"}});
  f.store.exec("UPDATE runs SET samples_per_s = NULL WHERE label = 'none'");

  CHECK(rows(f.store, "vs_pytorch", {"dataset", "batch_size", "scaling", "threads", "ranks", "dtnn_over_pytorch"}) ==
        std::vector<std::string>{
            "dataset=cifar10 batch_size=64 scaling=weak threads=1 ranks=1 dtnn_over_pytorch=2.0",
            "dataset=imagenet batch_size=64 scaling=strong threads=0 ranks=4 dtnn_over_pytorch=1.5",
            "dataset=imagenet batch_size=64 scaling=weak threads=0 ranks=4 dtnn_over_pytorch=4.0",
            "dataset=mnist batch_size=32 scaling=weak threads=1 ranks=1 dtnn_over_pytorch=2.0",
            "dataset=mnist batch_size=256 scaling=weak threads=1 ranks=1 dtnn_over_pytorch=2.0"});
}

TEST_CASE("query: throughput says each run's batch per rank and scaling mode", "[query]") {
  Fixture f("throughput_view");
  // 4 ranks x 256 (global 1024) and 256 in all on 4 ranks: both showed "ranks 4, batch_size 256".
  ok_run(f, "weak", 4, 4000, {{"batch_size", "256"}});
  ok_run(f, "strong", 4, 1500, {{"batch_size", "256"}, {"scaling", "strong"}});
  ok_run(f, "global", 2, 900, {{"global_batch_size", "128"}});
  // What their reports say they trained per rank (dtnn writes options as text).
  f.store.exec("UPDATE runs SET report = '{\"options\": {\"batch_size\": \"64\"}}' WHERE label IN ('strong', 'global')");
  CHECK(rows(f.store, "throughput", {"ranks", "batch_size", "batch_per_rank", "scaling"}) ==
        std::vector<std::string>{"ranks=4 batch_size=256 batch_per_rank=256 scaling=weak",
                                 "ranks=4 batch_size=256 batch_per_rank=64 scaling=strong",
                                 "ranks=2 batch_size=128 batch_per_rank=64 scaling=strong"});
}

TEST_CASE("query: layers averages a layer's times over runs of one device, batch and thread count only", "[query]") {
  Fixture f("layers_view");
  const auto layer = [&](int64_t run, const char* algo, const char* problem, double fwd) {
    f.store.exec("INSERT INTO layer_timings (run_id, layer_id, type, conv_algo, problem, forward_ms, backward_ms) "
                 "VALUES (" + std::to_string(run) + ", 1, 'Conv2D', '" + algo + "', '" + problem + "', " +
                 std::to_string(fwd) + ", 1.0)");
  };
  layer(ok_run(f, "cpu1", 1, 100, {{"batch_size", "64"}}), "gemm", "b64", 10);
  layer(ok_run(f, "cpu2", 1, 100, {{"batch_size", "64"}}), "gemm", "b64", 12);
  layer(ok_run(f, "gpu", 1, 100, {{"batch_size", "256"}, {"device", "gpu"}}), "cudnn", "b256", 0.5);
  // One row of 7.5 ms under the CPU run's labels before.
  CHECK(rows(f.store, "layers", {"device", "batch_per_rank", "conv_algo", "problem", "runs", "forward_ms"}) ==
        std::vector<std::string>{"device=cpu batch_per_rank=64 conv_algo=gemm problem=b64 runs=2 forward_ms=11.0",
                                 "device=gpu batch_per_rank=256 conv_algo=cudnn problem=b256 runs=1 forward_ms=0.5"});
}

TEST_CASE("query: frameworks gives each framework's median, spread and speed-up against its own fewest ranks",
          "[query]") {
  Fixture f("frameworks");
  const std::map<std::string, std::string> p = {{"batch_size", "64"}, {"dataset", "mnist"}, {"threads", "1"}};
  auto with = [&](const std::string& framework) {
    std::map<std::string, std::string> q = p;
    q["framework"] = framework;
    return q;
  };
  // dtnn: 1 rank 100, 300, 200 (median 200); 2 ranks 300, 500 (an even count: the middle two's mean, 400).
  for (double v : {100.0, 300.0, 200.0}) ok_run(f, "d1", 1, v, with("dtnn"));
  for (double v : {300.0, 500.0}) ok_run(f, "d2", 2, v, with("dtnn"));
  // pytorch: 1 rank 50; 2 ranks 60, 70, 80, 90 (median 75): speed-up 1.5, efficiency 0.75.
  ok_run(f, "t1", 1, 50, with("pytorch"));
  for (double v : {60.0, 70.0, 80.0, 90.0}) ok_run(f, "t2", 2, v, with("pytorch"));
  const std::vector<std::string> got =
      rows(f.store, "frameworks", {"ranks", "framework", "runs", "median_samples_per_s", "min_samples_per_s",
                                   "max_samples_per_s", "speedup", "efficiency", "baseline_ranks"});
  const std::vector<std::string> want = {
      "ranks=1 framework=dtnn runs=3 median_samples_per_s=200.0 min_samples_per_s=100.0 max_samples_per_s=300.0 "
      "speedup=1.0 efficiency=1.0 baseline_ranks=1",
      "ranks=1 framework=pytorch runs=1 median_samples_per_s=50.0 min_samples_per_s=50.0 max_samples_per_s=50.0 "
      "speedup=1.0 efficiency=1.0 baseline_ranks=1",
      "ranks=2 framework=dtnn runs=2 median_samples_per_s=400.0 min_samples_per_s=300.0 max_samples_per_s=500.0 "
      "speedup=2.0 efficiency=1.0 baseline_ranks=1",
      "ranks=2 framework=pytorch runs=4 median_samples_per_s=75.0 min_samples_per_s=60.0 max_samples_per_s=90.0 "
      "speedup=1.5 efficiency=0.75 baseline_ranks=1"};
  CHECK(got == want);
}
