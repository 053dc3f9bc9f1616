// Results in the formats CI systems already read: JUnit XML (GitLab, Jenkins, GitHub test reporters, Buildkite)
// and a Markdown summary (a GitHub job summary, a pull-request comment). `dtnn check`, `compare` and `history`
// write them with --junit FILE and --markdown FILE.
//
// JUnit XML as the de-facto schema has it (Apache Ant's JUnit report, the schema Jenkins' xunit and GitLab
// document): <testsuites> with one <testsuite> holding one <testcase> per trial; a failed case carries
// <failure message="..." type="...">details</failure>, a case not judged <skipped message="..."/>, and the
// counts tests/failures/errors/skipped on both suite elements. Text is XML-escaped; characters XML 1.0
// cannot hold (control characters) become '?'.
#pragma once

#include <string>
#include <vector>

namespace dtnn {

struct JUnitCase {
  std::string classname, name;
  std::string failure_type, failure_message, failure_text;  // failure_type "" = not failed
  std::string skipped_message;                               // "" = not skipped
  std::string system_out;                                    // the case's numbers, for every case
};

// The XML document.
std::string junit_xml(const std::string& suite_name, const std::vector<JUnitCase>& cases);

// A Markdown table: header cells, then rows (cells have '|' and newlines escaped).
std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

// Writes `text` to `path` atomically (a bad path: one dtnn::Error line, the old file untouched). No-op for "".
void write_ci_file(const std::string& path, const std::string& text);

}  // namespace dtnn
