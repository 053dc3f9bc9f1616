// The results store's migrations, in order. Migration i (1-based) takes the tables from version i-1 to i.
// Released migrations are never edited: a schema change is a new entry at the end (and a test that
// migrates a database of the previous version). Migrations hold tables and indexes only: every view is
// defined once, in results/views.sql, which the store drops and creates again around migrations (store.h).
// The descriptions of the migrations that once carried views still name them; their SQL no longer does.
#pragma once

#include "results/migrations_01_04.h"
#include "results/migrations_05_09.h"
#include "results/migrations_10.h"
#include "results/migrations_11.h"
#include "results/migrations_12.h"
#include "results/migrations_13.h"
#include "results/migrations_14.h"
#include "results/migrations_15.h"
#include "results/migrations_16.h"
#include "results/migrations_17.h"
#include "results/migrations_18.h"
#include "results/migrations_19.h"
#include "results/migrations_20.h"
#include "results/migrations_21.h"
#include "results/migrations_22.h"

namespace dtnn::schema {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

inline constexpr Migration kMigrations[] = {
    {1, "matrices, environments, runs, epochs, layer timings, throughput view", kMigration1Sql},
    {2, "run tags, accuracy targets, scaling and accuracy-vs-target views", kMigration2Sql},
    {3, "convolution benchmarks (dtnn ingest: bench_conv and dtnn layers JSON) and the fastest per problem",
     kMigration3Sql},
    {4, "run status 'diverged' (the training loss became NaN or infinite; its report and epochs are kept)",
     kMigration4Sql},
    {5, "communication of data-parallel runs per epoch (epoch_comm, v_comm) and exposed communication in v_scaling",
     kMigration5Sql},
    {6, "MPI collective benchmarks (dtnn ingest: suites/bench_allreduce's Google Benchmark JSON)", kMigration6Sql},
    {7, "per-rank phases, per-step stragglers and one step's timeline of traced and data-parallel runs; "
        "runs.trace_path",
     kMigration7Sql},
    {8, "predicted rows (dtnn predict, a matrix's mode = \"predict\" trials) apart from measured runs; "
        "v_scaling's source",
     kMigration8Sql},
    {9, "model averaging per run and per epoch (dtnn train --model_averaging): run_averaging, epoch_averaging, "
        "v_averaging, v_averaging_epochs",
     kMigration9Sql},
    {10, "the machine's identity in environments: CPU vendor, family/model/stepping, ISA, cores, caches, kernel, "
         "hypervisor, and machine_key (compare refuses to mix machines); targets' recipes; named_benchmarks "
         "(bench_gemm, bench_layers and other Google Benchmark JSON)", kMigration10Sql},
    {11, "where each run's ranks ran: scheduler, cluster, Slurm job and step, node list, tasks per node, "
         "launcher and its version; the runner's own Slurm job", kMigration11Sql},
    {12, "a target's momentum (NULL: not stated), matched by v_accuracy_vs_target", kMigration12Sql},
    {13, "v_accuracy_vs_target: a run's batch per rank and global batch as it trained them (strong scaling)",
     kMigration13Sql},
    {14, "v_accuracy_vs_target judges only runs trained from scratch (not from loaded weights, not evaluation only)",
     kMigration14Sql},
    {15, "predictions.variant (link rates, forced algorithm, bucket cap, batch, gamma or fit beyond the platform's "
         "name), a key of v_scaling's curves", kMigration15Sql},
    {16, "runs.runner_start: the runner process's boot id and start time beside its pid (a reused pid is not the "
         "runner)", kMigration16Sql},
    {17, "v_scaling: measured speed-up and efficiency against the fewest ranks of the configuration "
         "(baseline_ranks), not only 1 rank", kMigration17Sql},
    {18, "v_accuracy_vs_target: a weak-scaling run's global batch (its report's text \"0\" made it 0)",
     kMigration18Sql},
    {19, "v_throughput: each run's batch per rank and scaling mode (batch_size is the global batch of a "
         "strong-scaling trial)", kMigration19Sql},
    {20, "v_accuracy_vs_target: a target's learning rate is matched against the rate given (SGD's ran scaled "
         "by the ranks)", kMigration20Sql},
    {21, "epoch_comm's mode 'ddp' (PyTorch's DistributedDataParallel); v_frameworks: each framework's median samples/s with its spread, speed-up, efficiency, exposed "
         "communication and test accuracy per recipe and rank count, side by side", kMigration21Sql},
    {22, "contention_ceilings: independent copies' summed speed against one alone, per machine, model and rank "
         "count (experiments/contention_ceiling.sh, dtnn ingest), which dtnn predict reads", kMigration22Sql},
};

}  // namespace dtnn::schema
