// Migration 14 of the results store (results/migrations.h lists them all): v_accuracy_vs_target judges only
// runs trained from scratch. Released text is never edited.
#pragma once

namespace dtnn::schema {

// A run that began from trained weights (--weights_and_bias_filename naming a file that existed) or only
// evaluated them (--evaluate_only) reached its accuracy with training the recipe does not count: it was
// judged as if trained from scratch. Reports now carry "start" (engine/train/report.cpp); a report without it
// (older dtnn, PyTorch reference, PyDTNN) is taken from its options: evaluate_only, or a non-empty
// weights_and_bias_filename (it may have loaded that file), is not judged. analysis/targets.cpp's
// kRunRecipeColumns holds the same expression for dtnn check, which names the reason.
// The view is results/views.sql's v_accuracy_vs_target (its not_from_scratch column).

// Otherwise migration 13's view.
inline constexpr const char* kMigration14Sql = R"SQL()SQL";  // a view only: results/views.sql

}  // namespace dtnn::schema
