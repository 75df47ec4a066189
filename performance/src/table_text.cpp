// SPDX-License-Identifier: BSD-3-Clause
#include "table_text.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "marionette/performance/performance_error.hpp"

namespace marionette::detail {

namespace {
std::string trimmed(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}
}  // namespace

std::vector<TableLine> splitTable(const std::string& text, char separator) {
  std::vector<TableLine> out;
  std::size_t pos = 0;
  int line = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string s = text.substr(pos, end - pos);
    ++line;
    pos = end + 1;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    const std::string t = trimmed(s);
    if (t.empty() || t[0] == '#') continue;
    TableLine row;
    row.line = line;
    std::size_t start = 0;
    for (;;) {
      const std::size_t cut = s.find(separator, start);
      row.cells.push_back(trimmed(s.substr(start, cut == std::string::npos ? cut : cut - start)));
      if (cut == std::string::npos) break;
      start = cut + 1;
    }
    out.push_back(std::move(row));
  }
  return out;
}

double tableNumber(const TableLine& row, std::size_t column, const std::string& source,
                   const std::string& field, bool empty_is_nan) {
  if (column >= row.cells.size())
    throw PerformanceFileError(source, row.line, field, "missing (the line has " +
                                                            std::to_string(row.cells.size()) +
                                                            " columns)");
  const std::string& cell = row.cells[column];
  if (cell.empty() && empty_is_nan) return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  if (cell.empty() || *end != '\0' || !std::isfinite(v))
    throw PerformanceFileError(source, row.line, field,
                               "expected a finite number, got '" + cell + "'");
  return v;
}

}  // namespace marionette::detail
