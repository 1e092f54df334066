// A small RFC 4180 reader: comma-separated, optional double quotes ("" inside quotes), a
// header row first. Enough for landscape files; errors name the file and line.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tuner/expected.hpp"

namespace acceltune {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> row_lines;  // the file line each row starts on
};

Expected<CsvTable> read_csv(const std::filesystem::path& path, const std::string& text);
Expected<CsvTable> read_csv_file(const std::filesystem::path& path, std::string* text_out = nullptr);

// A cell as a number, if the whole cell is one.
bool parse_number(const std::string& cell, double& out);

}  // namespace acceltune
