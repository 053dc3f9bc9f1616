// Migration 15 of the results store (results/migrations.h lists them all): predictions.variant, what a
// prediction's options set beyond its platform's name, mode, scaling and rules, and v_scaling's curves keyed
// by it. Released text is never edited.
#pragma once

namespace dtnn::schema {

// v_scaling kept the newest prediction per (environment, configuration, source, model kind, model, platform
// name, rules, mode, scaling, ranks): predictions with other link rates (--inter_gbps: all named "eth10g*"),
// a forced algorithm, another bucket cap, batch, global batch, gamma or fit replaced each other under one
// label, the older silently gone. variant (analysis/perfmodel/predict_command.h prediction_variant: "inter
// 100 Gb/s; ring forced"; '' for none, NULL for rows stored before it) is part of the key and of the curve's
// label now. Otherwise migration 8's view.
inline constexpr const char* kMigration15Sql = R"SQL(
ALTER TABLE predictions ADD COLUMN variant TEXT;
DROP VIEW v_scaling;
CREATE VIEW v_scaling AS
  WITH agg AS (
    SELECT r.environment_id, r.config_key, r.framework, r.model, r.dataset, r.conv_algo, r.threads, r.device, r.ranks,
           avg(r.samples_per_s) AS sps, count(*) AS n, avg(c.exposed_fraction) AS exposed,
           avg(c.compute_ms / c.step_ms) AS compute
    FROM runs r LEFT JOIN v_comm c ON c.run_id = r.id WHERE r.status = 'ok'
    GROUP BY r.environment_id, r.config_key, r.ranks),
  newest AS (
    SELECT max(id) AS id FROM predictions
    GROUP BY environment_id, config_key, source, model_kind, model, platform, rules, mode, scaling,
             coalesce(variant, ''), ranks)
  SELECT * FROM (
  SELECT a.framework, a.model, a.dataset, a.conv_algo, a.threads, a.device, a.ranks, a.n AS runs,
         round(a.sps, 1) AS mean_samples_per_s, round(a.sps / b.sps, 3) AS speedup,
         round(a.sps / b.sps / a.ranks, 3) AS efficiency, a.environment_id, a.config_key,
         round(a.compute, 4) AS compute_fraction, round(a.exposed, 4) AS exposed_comm_fraction,
         'measured' AS source, NULL AS platform, NULL AS curve
  FROM agg a JOIN agg b ON b.environment_id = a.environment_id AND b.config_key = a.config_key AND b.ranks = 1
  UNION ALL
  SELECT r.framework, p.model, r.dataset, r.conv_algo, r.threads, r.device, p.ranks, 0 AS runs,
         round(p.samples_per_s, 1), round(p.speedup, 3), round(p.efficiency, 3), p.environment_id, p.config_key,
         round(p.compute_s / p.step_s, 4), round(p.exposed_s / p.step_s, 4), p.source, p.platform,
         p.source || ', ' || p.platform || ', ' || p.mode || CASE p.scaling WHEN 'strong' THEN ', strong' ELSE '' END
           || CASE WHEN p.model_kind = 'pydtnn' THEN ', PyDTNN formulas' WHEN p.source = 'model'
                    AND p.rules != 'ompi41' THEN ', ' || p.rules || ' rules' ELSE '' END
           || CASE WHEN coalesce(p.variant, '') != '' THEN ' (' || p.variant || ')' ELSE '' END
  FROM predictions p JOIN newest n ON n.id = p.id
  LEFT JOIN runs r ON r.id = (SELECT min(run_id) FROM prediction_runs l WHERE l.prediction_id = p.id))
  ORDER BY config_key, source, curve, ranks;
)SQL";

}  // namespace dtnn::schema
