// The definitions behind kernels/shared/csv.hpp: a small RFC 4180 reader.
#include "kernels/shared/csv.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace acceltune {

bool parse_number(const std::string& cell, double& out) {
  if (cell.empty()) return false;
  const char* b = cell.data();
  const char* e = cell.data() + cell.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

Expected<CsvTable> read_csv(const std::filesystem::path& path, const std::string& text) {
  CsvTable t;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, cell_was_quoted = false;
  size_t line = 1, row_line = 1;
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    return s.substr(i);
  };
  auto end_cell = [&] {
    row.push_back(cell_was_quoted ? cell : trim(cell));
    cell.clear();
    cell_was_quoted = false;
  };
  auto end_row = [&]() -> Status {
    end_cell();
    const bool blank = row.size() == 1 && row[0].empty();
    if (!blank) {
      if (t.header.empty()) {
        t.header = row;
      } else {
        if (row.size() != t.header.size()) {
          return input_error("{}:{}: row has {} fields but the header has {}", path.string(), row_line,
                             row.size(), t.header.size());
        }
        t.rows.push_back(row);
        t.row_lines.push_back(row_line);
      }
    }
    row.clear();
    row_line = line;
    return {};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"' && trim(cell).empty()) {
      cell.clear();
      quoted = true;
      cell_was_quoted = true;
    } else if (c == ',') {
      end_cell();
    } else if (c == '\n') {
      ++line;
      ACCELTUNE_TRY(end_row());
    } else {
      cell += c;
    }
  }
  if (quoted) return input_error("{}:{}: a quoted field is not closed", path.string(), row_line);
  if (!cell.empty() || !row.empty()) ACCELTUNE_TRY(end_row());
  if (t.header.empty()) return input_error("{}: the CSV file is empty; it needs a header row", path.string());
  return t;
}

Expected<CsvTable> read_csv_file(const std::filesystem::path& path, std::string* text_out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return input_error("{}: cannot read: {}", path.string(), std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto t = read_csv(path, text);
  if (text_out) *text_out = std::move(text);
  return t;
}

}  // namespace acceltune
