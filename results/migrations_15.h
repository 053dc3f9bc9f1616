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
)SQL";

}  // namespace dtnn::schema
