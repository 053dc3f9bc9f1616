// `dtnn query`: named views and read-only SQL over the results store, printed as an aligned table, CSV
// (RFC 4180 quoting) or JSON (an array of objects; numbers stay numbers).
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "results/store.h"

namespace dtnn {

// (name, description) of the named views: throughput, scaling, predictions, accuracy, runs, epochs, layers, targets,
// environments, matrices.
const std::vector<std::pair<std::string, std::string>>& query_views();

// The SQL of a view name, or the text itself when it is not a view name (then it must contain a space,
// else it is taken for a mistyped view name and throws dtnn::Error listing the views).
std::string query_sql(const std::string& view_or_sql);

void print_query(std::ostream& out, const QueryResult& result, const std::string& format);  // table|csv|json

// `dtnn query`: runs the statement on `store` and prints it. CSV and JSON are streamed (one row in memory at a
// time: ResultStore::query_rows); the table holds the rows for its column widths, within the store's result
// guard. The table shows control characters escaped (\x1b), as JSON does, so stored text cannot drive the
// terminal.
void run_query(std::ostream& out, const ResultStore& store, const std::string& sql, const std::string& format,
               double timeout_s);

}  // namespace dtnn
