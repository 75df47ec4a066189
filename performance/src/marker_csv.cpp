// SPDX-License-Identifier: BSD-3-Clause
// Marker tracks: "t,<point>_x,<point>_y,<point>_z,..." in stage coordinates.
#include <map>

#include "marionette/performance/sources.hpp"
#include "table_text.hpp"
#include "track_checks.hpp"

namespace marionette {

TargetMotion readMarkerCsv(const ModelPtr& model, const std::string& text,
                           const std::string& source) {
  const std::vector<detail::TableLine> rows = detail::splitTable(text, ',');
  if (rows.empty()) throw PerformanceFileError(source, 0, "header", "the file is empty");
  const detail::TableLine& header = rows.front();
  auto fail = [&](int line, const std::string& field, const std::string& what) {
    throw PerformanceFileError(source, line, field, what);
  };
  if (header.cells.empty() || header.cells[0] != "t")
    fail(header.line, "header", "the first column must be 't' (seconds)");
  TargetMotion out;
  out.source = source;
  // Column c (1..) is point columns[c].first, axis columns[c].second.
  std::vector<std::pair<int, int>> columns(header.cells.size(), {-1, -1});
  std::map<std::string, int> seen;  // point -> axes given (bit mask)
  for (std::size_t c = 1; c < header.cells.size(); ++c) {
    const std::string& name = header.cells[c];
    const std::string field = "column '" + name + "'";
    const std::size_t cut = name.rfind('_');
    const std::string axis = cut == std::string::npos ? "" : name.substr(cut + 1);
    if (axis != "x" && axis != "y" && axis != "z")
      fail(header.line, field, "expected <point>_x, <point>_y or <point>_z");
    const std::string point = name.substr(0, cut);
    if (model->pointIndex(point) < 0)
      fail(header.line, field, "model " + model->name + " has no point '" + point + "'" +
                                   detail::knownPoints(*model));
    const int a = axis[0] - 'x';
    if (seen[point] & (1 << a)) fail(header.line, field, "a second column for this axis");
    seen[point] |= 1 << a;
    int p = out.pointIndex(point);
    if (p < 0) {
      out.points.push_back(point);
      p = static_cast<int>(out.points.size()) - 1;
    }
    columns[c] = {p, a};
  }
  for (const auto& [point, mask] : seen)
    if (mask != 7) fail(header.line, "column '" + point + "_x'", "point '" + point +
                                         "' needs all three columns _x, _y, _z");
  if (out.points.empty()) fail(header.line, "header", "no point columns");
  const int frames = static_cast<int>(rows.size()) - 1;
  out.positions_m.resize(frames, 3 * static_cast<int>(out.points.size()));
  out.values.resize(frames, 0);
  for (int f = 0; f < frames; ++f) {
    const detail::TableLine& row = rows[f + 1];
    if (row.cells.size() != header.cells.size())
      fail(row.line, "line", std::to_string(row.cells.size()) + " columns, the header has " +
                                 std::to_string(header.cells.size()));
    out.times_s.push_back(detail::tableNumber(row, 0, source, "column 't'"));
    for (std::size_t c = 1; c < row.cells.size(); ++c)
      out.positions_m(f, 3 * columns[c].first + columns[c].second) = detail::tableNumber(
          row, c, source, "column '" + header.cells[c] + "'", /*empty_is_nan=*/true);
  }
  detail::checkTracks(out, [&](int frame) { return rows[frame + 1].line; });
  return out;
}

}  // namespace marionette
