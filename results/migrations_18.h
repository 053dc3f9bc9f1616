// Migration 18 of the results store (results/migrations.h lists them all): v_accuracy_vs_target reads a
// weak-scaling run's global batch right. Released text is never edited.
#pragma once


namespace dtnn::schema {

// A dtnn report writes every option as text: a weak-scaling run has "global_batch_size": "0", and
// nullif('0', 0) compares text with an integer, so it kept '0' and the run's global batch came out 0. Every
// target stated as a global batch (the CIFAR ResNets, VGG, the ImageNet models in analysis/targets.toml)
// judged no weak-scaling dtnn run, 1-rank runs included, while PyTorch's reports (no such option) were
// judged. The option is cast to an integer before nullif. analysis/targets.cpp's kRunRecipeColumns (dtnn
// check) had the same expression. Otherwise migration 14's view.
inline constexpr const char* kMigration18Sql = R"SQL()SQL";  // a view only: results/views.sql

}  // namespace dtnn::schema
