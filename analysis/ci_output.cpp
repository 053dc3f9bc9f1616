// See ci_output.h.
#include "analysis/ci_output.h"

#include "core/file_io.h"

namespace dtnn {

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows tab, newline and carriage return among the control characters, no others.
        out += c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : static_cast<char>(c);
    }
  }
  return out;
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

}  // namespace

std::string junit_xml(const std::string& suite_name, const std::vector<JUnitCase>& cases) {
  int failures = 0, skipped = 0;
  for (const JUnitCase& c : cases) {
    failures += !c.failure_type.empty();
    skipped += c.failure_type.empty() && !c.skipped_message.empty();
  }
  const std::string counts = " tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failures) +
                             "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\" time=\"0\"";
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += "<testsuites name=\"" + xml_escape(suite_name) + "\"" + counts + ">\n";
  x += "  <testsuite name=\"" + xml_escape(suite_name) + "\"" + counts + ">\n";
  for (const JUnitCase& c : cases) {
    x += "    <testcase classname=\"" + xml_escape(c.classname) + "\" name=\"" + xml_escape(c.name) + "\" time=\"0\">\n";
    if (!c.failure_type.empty())
      x += "      <failure message=\"" + xml_escape(c.failure_message) + "\" type=\"" + xml_escape(c.failure_type) +
           "\">" + xml_escape(c.failure_text) + "</failure>\n";
    else if (!c.skipped_message.empty())
      x += "      <skipped message=\"" + xml_escape(c.skipped_message) + "\"/>\n";
    if (!c.system_out.empty()) x += "      <system-out>" + xml_escape(c.system_out) + "</system-out>\n";
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string md = "|";
  for (const std::string& h : header) md += " " + md_cell(h) + " |";
  md += "\n|";
  for (size_t i = 0; i < header.size(); ++i) md += " --- |";
  md += "\n";
  for (const auto& row : rows) {
    md += "|";
    for (size_t i = 0; i < header.size(); ++i) md += " " + md_cell(i < row.size() ? row[i] : "") + " |";
    md += "\n";
  }
  return md;
}

void write_ci_file(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  write_file_atomically(path, text);
}

}  // namespace dtnn
