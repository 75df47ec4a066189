// SPDX-License-Identifier: BSD-3-Clause
// Roadmap files: a text format, written atomically with a checksum of its content, refused when
// the checksum or its fingerprint is not the caller's (another model, scene or options).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>

#include "marionette/common/files.hpp"
#include "roadmap_graph.hpp"

namespace marionette {

void RestPoseRoadmap::save(const std::string& path) const {
  // Saves take turns, so that a later save writes a later snapshot.
  std::lock_guard<std::mutex> saving(graph_->save_mutex);
  const std::string text = serialize();
  writeFileAtomically(path, [&](std::ostream& file) { file << text; });
}

std::size_t RestPoseRoadmap::maxFileBytes(const Model& model, const RoadmapOptions& options) {
  // Its lines at their longest: the header (the options' line included), a vertex's n_k + n_d
  // numbers of at most 25 characters each, and an edge's two indices and two numbers; at most
  // `vertices` vertices, and an edge to each of its `neighbours` both ways plus the one the
  // build reached it by.  Twice that, for what this estimate misses.
  const double vertex = 26.0 * (model.nk() + model.nd()) + 2;
  const double edge = 2 * 8 + 2 * 26 + 6;
  const double v = options.vertices;
  const double bytes =
      2 * (8192 + options.describe().size() + v * vertex + v * (2 * options.neighbours + 1) * edge);
  return static_cast<std::size_t>(std::min(bytes, 4e9));
}

std::string RestPoseRoadmap::serialize() const {
  // The edges under the graph's lock (queries write verdicts back), the text outside it: a query
  // waits for a copy, not for the disk.  Vertices do not change after the build.
  const std::vector<Edge> snapshot = edges();
  std::ostringstream os;
  os << std::setprecision(17);
  os << "marionette-roadmap 2\n";
  os << "fingerprint " << fingerprint_ << '\n';
  os << "options " << options_.describe() << '\n';
  os << "build_time_s " << build_time_s_ << '\n';
  const Model& m = collision_->model();
  os << "vertices " << vertices_.size() << ' ' << m.nk() << ' ' << m.nd() << '\n';
  for (const Vertex& v : vertices_) {
    for (int i = 0; i < v.rho.size(); ++i) os << v.rho[i] << ' ';
    for (int i = 0; i < v.q.size(); ++i) os << v.q[i] << (i + 1 < v.q.size() ? " " : "");
    os << '\n';
  }
  os << "edges " << snapshot.size() << '\n';
  for (const Edge& e : snapshot)
    os << e.from << ' ' << e.to << ' ' << e.move_s << ' ' << e.settle_s << ' ' << int(e.state)
       << ' ' << int(e.from_build) << '\n';
  // Version 2's last line: what a file copied in part, or damaged, no longer matches.
  const std::string text = os.str();
  return text + "checksum " + roadmap::hash128(text) + '\n';
}

std::shared_ptr<RestPoseRoadmap> RestPoseRoadmap::load(const std::string& path,
                                                       CollisionModelPtr collision,
                                                       const RoadmapOptions& options) {
  options.check();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw RoadmapFileError(path + ": a directory");
  // Never more than such a roadmap can be (a file of zeros or a sparse gigabyte is refused).
  const std::size_t limit = maxFileBytes(collision->model(), options);
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > limit)
    throw RoadmapFileError(path + ": " + std::to_string(size) + " bytes, more than such a roadmap "
                           "takes (" + std::to_string(limit) + ")");
  std::string text;
  try {
    text = readTextFile(path, limit);
  } catch (const FileError& e) {
    throw RoadmapFileUnreadable(path + ": " + e.what());
  }
  std::istringstream is(text);
  return read(is, path, std::move(collision), options);
}

std::shared_ptr<RestPoseRoadmap> RestPoseRoadmap::read(std::istream& is, const std::string& path,
                                                       CollisionModelPtr collision,
                                                       const RoadmapOptions& options) {
  options.check();
  // The whole text first: version 2 ends with the checksum of everything before its last line.
  std::string text((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
  if (text.rfind("marionette-roadmap 2\n", 0) == 0) {
    const std::size_t last =
        text.size() > 1 ? text.rfind('\n', text.size() - 2) : std::string::npos;
    const std::string tail = last == std::string::npos ? "" : text.substr(last + 1);
    const std::string content = text.substr(0, last == std::string::npos ? 0 : last + 1);
    if (tail != "checksum " + roadmap::hash128(content) + "\n")
      throw RoadmapFileError(path + ": damaged or incomplete (its checksum does not match)");
    text = content;
  }
  std::istringstream lines(text);
  int line_no = 0;
  std::string line;
  auto fail = [&](const std::string& what) {
    return RoadmapFileError(path + ":" + std::to_string(line_no) + ": " + what);
  };
  auto next = [&]() -> std::istringstream {
    if (!std::getline(lines, line)) throw fail("unexpected end of file");
    ++line_no;
    return std::istringstream(line);
  };
  std::string word;
  int version = 0;
  if (!(next() >> word >> version) || word != "marionette-roadmap" || version < 1 || version > 2)
    throw fail("not a marionette roadmap (version 1 or 2)");
  std::string fp;
  {
    auto ls = next();
    ls >> word;
    std::getline(ls >> std::ws, fp);
    if (word != "fingerprint") throw fail("expected 'fingerprint'");
  }
  std::shared_ptr<RestPoseRoadmap> rm(new RestPoseRoadmap(collision, options));
  const std::string& expected = rm->fingerprint_;
  if (fp != expected)
    throw fail("built for another model, scene or roadmap options (fingerprint '" + fp +
               "', this is '" + expected + "'); delete it or use another file");
  {
    // The options are in the fingerprint; their line is there for people reading the file.
    auto ls = next();
    if (!(ls >> word) || word != "options") throw fail("expected 'options'");
  }
  const RoadmapOptions& opt = options;
  {
    auto ls = next();
    if (!(ls >> word >> rm->build_time_s_) || word != "build_time_s" ||
        !std::isfinite(rm->build_time_s_))
      throw fail("expected 'build_time_s SECONDS'");
  }
  const Model& m = collision->model();
  std::size_t nv = 0;
  int nk = 0, nd = 0;
  if (!(next() >> word >> nv >> nk >> nd) || word != "vertices")
    throw fail("expected 'vertices N NK ND'");
  // What the header declares, against what this roadmap's options can make.
  if (nv > kMaxRoadmapVertices || nv > static_cast<std::size_t>(options.vertices))
    throw fail("more than the " + std::to_string(options.vertices) + " vertices its options make");
  if (nk != m.nk() || nd != m.nd()) throw fail("vertex sizes do not match the model");
  for (std::size_t i = 0; i < nv; ++i) {
    auto ls = next();
    Vertex v{Eigen::VectorXd(nk), Eigen::VectorXd(nd)};
    for (int j = 0; j < nk; ++j)
      if (!(ls >> v.rho[j])) throw fail("vertex: expected " + std::to_string(nk + nd) + " numbers");
    for (int j = 0; j < nd; ++j)
      if (!(ls >> v.q[j])) throw fail("vertex: expected " + std::to_string(nk + nd) + " numbers");
    if (!v.rho.allFinite() || !v.q.allFinite()) throw fail("vertex: non-finite value");
    rm->vertices_.push_back(std::move(v));
  }
  std::size_t ne = 0;
  if (!(next() >> word >> ne) || word != "edges") throw fail("expected 'edges M'");
  if (ne > nv * (2 * static_cast<std::size_t>(options.neighbours) + 1))
    throw fail("more edges than " + std::to_string(nv) + " vertices with " +
               std::to_string(options.neighbours) + " neighbours have");
  BGraph& g = rm->graph_->g;
  g = BGraph(nv);
  for (std::size_t i = 0; i < ne; ++i) {
    auto ls = next();
    std::size_t a, b;
    EdgeProps p;
    int state;
    int from_build = 0;  // version 2: whether the learning phase found the verdict
    if (!(ls >> a >> b >> p.move_s >> p.settle_s >> state) || a >= nv || b >= nv || state < 0 ||
        state > 2 || (version == 2 && !(ls >> from_build)) || from_build < 0 || from_build > 1)
      throw fail("edge: expected FROM TO MOVE_S SETTLE_S STATE(0-2)" +
                 std::string(version == 2 ? " BUILD(0-1)" : "") + " with vertex indices < " +
                 std::to_string(nv));
    p.from_build = from_build == 1;
    if (!(std::isfinite(p.move_s) && p.move_s >= 0.0 && std::isfinite(p.settle_s) &&
          p.settle_s >= 0.0))
      throw fail("edge: MOVE_S and SETTLE_S must be finite and >= 0");
    p.state = static_cast<EdgeState>(state);
    p.cost = roadmap::edgeCost(p, opt);
    boost::add_edge(a, b, p, g);
  }
  return rm;
}

int RestPoseRoadmap::adoptVerdicts(const RestPoseRoadmap& other) {
  if (&other == this || other.fingerprint_ != fingerprint_ ||
      other.vertices_.size() != vertices_.size())
    return -1;
  for (std::size_t i = 0; i < vertices_.size(); ++i)
    if (other.vertices_[i].rho != vertices_[i].rho || other.vertices_[i].q != vertices_[i].q)
      return -1;  // another build (one a time limit cut short)
  const std::vector<Edge> theirs = other.edges();
  int adopted = 0;
  std::lock_guard<std::mutex> lock(graph_->mutex);
  BGraph& g = graph_->g;
  for (const Edge& e : theirs) {
    if (e.state == EdgeState::Unknown) continue;
    const auto [mine, present] = boost::edge(e.from, e.to, g);
    if (!present || g[mine].state != EdgeState::Unknown) continue;
    g[mine].state = e.state;
    g[mine].settle_s = e.settle_s;
    g[mine].cost = roadmap::edgeCost(g[mine], options_);
    ++adopted;
  }
  return adopted;
}

}  // namespace marionette
