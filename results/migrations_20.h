// Migration 20 of the results store (results/migrations.h lists them all): v_accuracy_vs_target matches a
// target's learning rate against the rate the run was given. Released text is never edited.
#pragma once


namespace dtnn::schema {

// A report's options.learning_rate is the rate as run: with --parallel=data, SGD and --learning_rate_scaling
// (PyDTNN's default) the given rate times the ranks. A recipe states the rate as given for every rank count, so
// an SGD target for ranks = [1, 2] never judged its 2-rank runs (0.02 against 0.01). Reports since this
// migration keep the given value under options_given where it differs; older reports and PyTorch's (no
// scaling) fall back to options.learning_rate. analysis/targets.cpp's kRunRecipeColumns (dtnn check) alike.
// Otherwise migration 18's view.
inline constexpr const char* kMigration20Sql = R"SQL()SQL";  // a view only: results/views.sql

}  // namespace dtnn::schema
