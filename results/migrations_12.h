// Migration 12 of the results store (results/migrations.h lists them all): a target may state its recipe's
// momentum. Released text is never edited.
#pragma once

namespace dtnn::schema {

// NULL: not stated, matching any run (every target stored before, and the adam recipes). A stated momentum
// matches a run whose report's options (every option, defaults included), else its trial parameters, give
// the same value; a run recording neither is another recipe. Why: SGD at the same rate with and without
// momentum are different recipes (d2l's ResNet-18 has none, dtnn's default is 0.9), and the view and
// `dtnn check` judged them by one number. The view is migration 10's with that one condition added.
inline constexpr const char* kMigration12Sql = R"SQL(
ALTER TABLE targets ADD COLUMN momentum REAL;
)SQL";

}  // namespace dtnn::schema
