// Migration 17 of the results store (results/migrations.h lists them all): v_scaling's measured speed-up and
// efficiency against the fewest ranks a configuration ran on, not only against 1 rank. Released text is never
// edited.
#pragma once

namespace dtnn::schema {

// Before, a measured row needed an ok 1-rank run of its configuration: a study over nodes with ranks_per_node
// = 4 (ranks 4, 8, 16; ranks_per_node is part of config_key, experiments/runner.cpp run_start) had no rows at
// all, and `dtnn report` left it out. Now the baseline is the fewest ranks of the group with a measured
// samples/s; baseline_ranks (a new last column) says which: speed-up = samples/s / the baseline's, efficiency =
// speed-up x baseline_ranks / ranks (1 rank: as before). Predicted rows keep the model's own 1-rank baseline
// (baseline_ranks 1). `runs` counts the runs with a samples/s (an ok run without one, e.g. evaluation only,
// was counted but not averaged). Otherwise migration 15's view.
inline constexpr const char* kMigration17Sql = R"SQL(
DROP VIEW v_scaling;
CREATE VIEW v_scaling AS
  WITH agg AS (
    SELECT r.environment_id, r.config_key, r.framework, r.model, r.dataset, r.conv_algo, r.threads, r.device, r.ranks,
           avg(r.samples_per_s) AS sps, count(r.samples_per_s) AS n, avg(c.exposed_fraction) AS exposed,
           avg(c.compute_ms / c.step_ms) AS compute
    FROM runs r LEFT JOIN v_comm c ON c.run_id = r.id WHERE r.status = 'ok'
    GROUP BY r.environment_id, r.config_key, r.ranks),
  base AS (
    SELECT environment_id, config_key, min(ranks) AS ranks FROM agg WHERE sps > 0 GROUP BY environment_id, config_key),
  newest AS (
    SELECT max(id) AS id FROM predictions
    GROUP BY environment_id, config_key, source, model_kind, model, platform, rules, mode, scaling,
             coalesce(variant, ''), ranks)
  SELECT * FROM (
  SELECT a.framework, a.model, a.dataset, a.conv_algo, a.threads, a.device, a.ranks, a.n AS runs,
         round(a.sps, 1) AS mean_samples_per_s, round(a.sps / b.sps, 3) AS speedup,
         round(a.sps / b.sps * b.ranks / a.ranks, 3) AS efficiency, a.environment_id, a.config_key,
         round(a.compute, 4) AS compute_fraction, round(a.exposed, 4) AS exposed_comm_fraction,
         'measured' AS source, NULL AS platform, NULL AS curve, b.ranks AS baseline_ranks
  FROM agg a JOIN base m ON m.environment_id = a.environment_id AND m.config_key = a.config_key
  JOIN agg b ON b.environment_id = a.environment_id AND b.config_key = a.config_key AND b.ranks = m.ranks
  UNION ALL
  SELECT r.framework, p.model, r.dataset, r.conv_algo, r.threads, r.device, p.ranks, 0 AS runs,
         round(p.samples_per_s, 1), round(p.speedup, 3), round(p.efficiency, 3), p.environment_id, p.config_key,
         round(p.compute_s / p.step_s, 4), round(p.exposed_s / p.step_s, 4), p.source, p.platform,
         p.source || ', ' || p.platform || ', ' || p.mode || CASE p.scaling WHEN 'strong' THEN ', strong' ELSE '' END
           || CASE WHEN p.model_kind = 'pydtnn' THEN ', PyDTNN formulas' WHEN p.source = 'model'
                    AND p.rules != 'ompi41' THEN ', ' || p.rules || ' rules' ELSE '' END
           || CASE WHEN coalesce(p.variant, '') != '' THEN ' (' || p.variant || ')' ELSE '' END,
         1 AS baseline_ranks
  FROM predictions p JOIN newest n ON n.id = p.id
  LEFT JOIN runs r ON r.id = (SELECT min(run_id) FROM prediction_runs l WHERE l.prediction_id = p.id))
  ORDER BY config_key, source, curve, ranks;
)SQL";

}  // namespace dtnn::schema
