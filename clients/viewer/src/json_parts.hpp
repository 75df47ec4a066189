// SPDX-License-Identifier: BSD-3-Clause
// Internal: the pieces the view document is written from (vectors, poses, lists, rows, shapes).
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "marionette/common/json_text.hpp"

namespace marionette::viewer {

inline void jsonVector3(std::ostream& os, const Eigen::Vector3d& v) {
  os << '[';
  writeJsonNumber(os, v.x());
  os << ',';
  writeJsonNumber(os, v.y());
  os << ',';
  writeJsonNumber(os, v.z());
  os << ']';
}

// Position then unit quaternion (x, y, z, w): three.js's order.  No brackets.
inline void jsonPose(std::ostream& os, const Eigen::Isometry3d& pose) {
  const Eigen::Quaterniond q(pose.linear());
  const Eigen::Vector3d& p = pose.translation();
  os << p.x() << ',' << p.y() << ',' << p.z() << ',' << q.x() << ',' << q.y() << ',' << q.z() << ','
     << q.w();
}

template <class T, class Write>
void jsonList(std::ostream& os, const std::vector<T>& items, Write write) {
  os << '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) os << ',';
    write(items[i]);
  }
  os << ']';
}

inline void jsonNames(std::ostream& os, const std::vector<std::string>& names) {
  jsonList(os, names, [&](const std::string& n) { writeJsonString(os, n); });
}

// [["key","value"],...]
inline void jsonPairs(std::ostream& os,
                      const std::vector<std::pair<std::string, std::string>>& pairs) {
  jsonList(os, pairs, [&](const std::pair<std::string, std::string>& p) {
    os << '[';
    writeJsonString(os, p.first);
    os << ',';
    writeJsonString(os, p.second);
    os << ']';
  });
}

// One row per line: [[a,b],\n[c,d]]
inline void jsonRows(std::ostream& os, const Eigen::MatrixXd& m) {
  os << '[';
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    os << (i ? ",\n[" : "\n[");
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      if (j) os << ',';
      writeJsonNumber(os, m(i, j));
    }
    os << ']';
  }
  os << ']';
}

inline void jsonColumn(std::ostream& os, const std::vector<double>& v) {
  jsonList(os, v, [&](double x) { writeJsonNumber(os, x); });
}

}  // namespace marionette::viewer
