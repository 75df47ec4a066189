// SPDX-License-Identifier: BSD-3-Clause
// Delimited text tables (the marker CSV, Egger's tab-separated .pcr): lines split into cells,
// numbers read with the file, line and column in every error.
#pragma once

#include <string>
#include <vector>

namespace marionette::detail {

struct TableLine {
  int line = 0;  // 1-based
  std::vector<std::string> cells;
};

// Non-blank lines, without a trailing '\r', split at `separator` (cells trimmed of spaces);
// lines starting with '#' are comments.
std::vector<TableLine> splitTable(const std::string& text, char separator);

// The cell as a finite number, or NaN for an empty cell when `empty_is_nan`; otherwise
// PerformanceFileError(source, line, field, ...).
double tableNumber(const TableLine& row, std::size_t column, const std::string& source,
                   const std::string& field, bool empty_is_nan = false);

}  // namespace marionette::detail
