// The rest-pose roadmap (seed 001 §IV-A, §IV-D): learning phase (sample inputs, solve the rest
// pose, keep collision-free ones, connect nearest neighbours without checking) and query phase
// (connect start and goal, A* in Boost.Graph, simulate the path's unchecked edges, drop a
// failing one and search again).
#include "marionette/planner/roadmap.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/astar_search.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

#include "marionette/common/clock.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette {

struct EdgeProps {
  double move_s = 0.0;
  double settle_s = 0.0;
  RestPoseRoadmap::EdgeState state = RestPoseRoadmap::EdgeState::Unknown;
  double cost = 0.0;  // A* weight (s): move + settle (an estimate until the edge is simulated)
};
using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                     EdgeProps>;
struct RestPoseRoadmap::Graph {
  BGraph g;
};

namespace {

// Lower bound of the time to move the inputs from a to b at the speed limits (s).
double timeLowerBound(const Model& model, const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  double t = 0.0;
  for (int i = 0; i < model.nk(); ++i)
    t = std::max(t, std::abs(a[i] - b[i]) / model.kinematic[i].max_speed);
  return t;
}

double moveDuration(const Model& model, const Eigen::VectorXd& a, const Eigen::VectorXd& b,
                    double dt, double slowdown) {
  RigTrajectory t(dt, a);
  appendMove(model, t, b, slowdown);
  return t.duration_s();
}

// What simulating one edge found.
struct EdgeCheck {
  bool ok = false;
  double settle_s = 0.0;
  long propagations = 0, collision_checks = 0;
};

class EdgeSimulator {
 public:
  EdgeSimulator(const CollisionModelPtr& collision, const RoadmapOptions& opt)
      : model_ptr_(collision->modelPtr()),
        model_(*model_ptr_),
        opt_(opt),
        vi_(model_ptr_,
            [&] {
              IntegratorOptions o;
              o.dt_s = opt.step_s;
              return o;
            }()),
        checker_(collision),
        data_(model_) {}

  // The largest distance (m) between the same named point of the puppet at q_a and at q_b (n_d
  // each, inputs rho): how far apart two poses look, whatever joints (and whole turns) differ.
  double pointDisplacement(const Eigen::VectorXd& q_a, const Eigen::VectorXd& q_b,
                           const Eigen::VectorXd& rho) {
    qa_full_.resize(model_.nq());
    qa_full_ << q_a, rho;
    forwardKinematics(model_, data_, qa_full_);
    points_a_.resize(model_.points.size());
    for (std::size_t i = 0; i < model_.points.size(); ++i)
      points_a_[i] = pointPosition(data_, model_.points[i].frame, model_.points[i].position_m);
    qa_full_ << q_b, rho;
    forwardKinematics(model_, data_, qa_full_);
    double d = 0.0;
    for (std::size_t i = 0; i < model_.points.size(); ++i)
      d = std::max(d, (pointPosition(data_, model_.points[i].frame, model_.points[i].position_m) -
                       points_a_[i])
                          .norm());
    return d;
  }

  // One step to the inputs rho, then the collision check; false on a failed step or a contact.
  bool stepChecked(State& x, const Eigen::VectorXd& rho, EdgeCheck& out) {
    ++out.propagations;
    if (vi_.step(x, rho, x) != StepStatus::Ok) return false;
    q_full_.resize(model_.nq());
    q_full_ << x.q, x.rho;
    ++out.collision_checks;
    return !checker_.inCollision(q_full_).in_collision;
  }

  // From rest at (rho_a, q_a), the quintic move to rho_b, every step checked; x is the state at
  // its end.  False on a failed step or a contact.
  bool move(const Eigen::VectorXd& rho_a, const Eigen::VectorXd& q_a, const Eigen::VectorXd& rho_b,
            State& x, EdgeCheck& out) {
    RigTrajectory traj(opt_.step_s, rho_a);
    appendMove(model_, traj, rho_b, opt_.slowdown);
    x = vi_.stateFromVelocity(q_a, Eigen::VectorXd::Zero(model_.nd()), rho_a);
    for (int k = 1; k < traj.knots(); ++k)
      if (!stepChecked(x, traj.position.row(k).transpose(), out)) return false;
    return true;
  }

  // From rest at (rho_a, q_a): move to rho_b, then hold until settled near q_b.
  EdgeCheck check(const Eigen::VectorXd& rho_a, const Eigen::VectorXd& q_a,
                  const Eigen::VectorXd& rho_b, const Eigen::VectorXd& q_b) {
    EdgeCheck out;
    State x;
    Eigen::VectorXd qfull(model_.nq());
    auto stepTo = [&](const Eigen::VectorXd& rho) { return stepChecked(x, rho, out); };
    if (!move(rho_a, q_a, rho_b, x, out)) return out;
    const int max_hold = static_cast<int>(std::ceil(opt_.settle_max_s / opt_.step_s));
    for (int k = 0; k <= max_hold; ++k) {
      if (k > 0 && !stepTo(rho_b)) return out;
      qfull << x.q, x.rho;
      if (pointDisplacement(x.q, q_b, x.rho) <= opt_.settle_tolerance &&
          kineticEnergyFromMomentum(model_, data_, qfull, x.p, opt_.step_s) <=
              opt_.settle_energy_J) {
        out.ok = true;
        out.settle_s = k * opt_.step_s;
        return out;
      }
    }
    return out;
  }

  // The path as one continuous motion from the start state: each move, then a hold until the
  // swing -- carried over from what came before -- has settled near the edge's target rest
  // pose (the edge checks start from exact rest; this is what actually happens).  Appends to
  // `traj`; returns false if some hold does not settle within twice settle_max_s.
  bool assemble(const Eigen::VectorXd& q0, const Eigen::VectorXd& qdot0, RigTrajectory& traj,
                const std::vector<RestPoseRoadmap::Vertex>& targets, GoalEvaluator* final_goal,
                long& propagations) {
    const Eigen::VectorXd rho0 = traj.position.row(0).transpose();
    State x = vi_.stateFromVelocity(q0, qdot0, rho0);
    Eigen::VectorXd u(model_.nk()), qfull(model_.nq());
    auto advanceFrom = [&](int first) {  // simulate knots first .. last
      for (int k = first; k < traj.knots(); ++k) {
        u = traj.position.row(k).transpose();
        ++propagations;
        if (vi_.step(x, u, x) != StepStatus::Ok) return false;
      }
      return true;
    };
    int done = 0;  // knots simulated so far
    bool settled_all = true;
    for (std::size_t t = 0; t < targets.size(); ++t) {
      if (t > 0) appendMove(model_, traj, targets[t].rho, opt_.slowdown);
      if (!advanceFrom(done + 1)) return false;
      done = traj.knots() - 1;
      // The last hold also waits for the goal itself (its tolerance may be tighter).
      GoalEvaluator* goal = t + 1 == targets.size() ? final_goal : nullptr;
      const double energy = opt_.settle_energy_J;
      const int max_hold = static_cast<int>(std::ceil(2 * opt_.settle_max_s / opt_.step_s));
      const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model_.nk());
      for (int k = 0;; ++k) {
        qfull << x.q, x.rho;
        if (pointDisplacement(x.q, targets[t].q, x.rho) <= opt_.settle_tolerance &&
            kineticEnergyFromMomentum(model_, data_, qfull, x.p, opt_.step_s) <= energy &&
            (!goal || goal->measureFromMomentum(x.q, x.rho, x.p, zero, opt_.step_s).satisfied))
          break;
        if (k == max_hold) {
          settled_all = false;
          break;
        }
        traj.append(targets[t].rho, zero);
        ++propagations;
        ++done;
        if (vi_.step(x, targets[t].rho, x) != StepStatus::Ok) return false;
      }
    }
    return settled_all;
  }

  // The learning phase's edge: from rest at (rho_a, q_a), move to rho_b and hold until the
  // puppet comes to rest -- wherever the dynamics take it.  The rest pose reached (polished to
  // an exact equilibrium) becomes the new vertex, so vertices are equilibria the puppet actually
  // settles into from the roadmap, not just any equilibrium of their inputs (puppets with slack
  // strings have several).  Returns nullopt on a collision or if it does not settle.
  std::optional<std::pair<RestPoseRoadmap::Vertex, EdgeCheck>> reach(const Eigen::VectorXd& rho_a,
                                                                     const Eigen::VectorXd& q_a,
                                                                     const Eigen::VectorXd& rho_b) {
    EdgeCheck out;
    State x;
    Eigen::VectorXd qfull(model_.nq());
    auto stepTo = [&](const Eigen::VectorXd& rho) { return stepChecked(x, rho, out); };
    if (!move(rho_a, q_a, rho_b, x, out)) return std::nullopt;
    const int max_hold = static_cast<int>(std::ceil(opt_.settle_max_s / opt_.step_s));
    int next_try = 0;
    for (int k = 0; k <= max_hold; ++k) {
      if (k > 0 && !stepTo(rho_b)) return std::nullopt;
      if (k < next_try) continue;
      qfull << x.q, x.rho;
      if (kineticEnergyFromMomentum(model_, data_, qfull, x.p, opt_.step_s) > opt_.settle_energy_J)
        continue;
      const RestPose rest = computeRestPose(model_ptr_, rho_b, &x.q);
      if (rest.ok && pointDisplacement(x.q, rest.q, rho_b) <= opt_.settle_tolerance) {
        if (checker_.inCollision(model_.configuration(rest.q, rho_b)).in_collision)
          return std::nullopt;
        out.ok = true;
        out.settle_s = k * opt_.step_s;
        return std::make_pair(RestPoseRoadmap::Vertex{rho_b, rest.q}, out);
      }
      next_try = k + static_cast<int>(std::ceil(0.25 / opt_.step_s));  // look again in 0.25 s
    }
    return std::nullopt;
  }

  // Holds rho from (q, qdot) until settled; returns the hold time, or -1 if it does not settle.
  double settle(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot, const Eigen::VectorXd& rho,
                const Eigen::VectorXd& q_rest, long& propagations) {
    State x = vi_.stateFromVelocity(q, qdot, rho);
    Eigen::VectorXd qfull(model_.nq());
    const int max_hold = static_cast<int>(std::ceil(4 * opt_.settle_max_s / opt_.step_s));
    for (int k = 0; k <= max_hold; ++k) {
      if (k > 0) {
        ++propagations;
        if (vi_.step(x, rho, x) != StepStatus::Ok) return -1.0;
      }
      qfull << x.q, x.rho;
      if (pointDisplacement(x.q, q_rest, x.rho) <= opt_.settle_tolerance &&
          kineticEnergyFromMomentum(model_, data_, qfull, x.p, opt_.step_s) <= opt_.settle_energy_J)
        return k * opt_.step_s;
    }
    return -1.0;
  }

 private:
  ModelPtr model_ptr_;
  const Model& model_;
  RoadmapOptions opt_;
  VariationalIntegrator vi_;
  CollisionChecker checker_;
  DynamicsData data_;
  Eigen::VectorXd qa_full_, q_full_;
  std::vector<Eigen::Vector3d> points_a_;
};

// A rest pose of rho that is collision-free, or nullopt.
std::optional<RestPoseRoadmap::Vertex> restVertex(const ModelPtr& model, CollisionChecker& checker,
                                                  const Eigen::VectorXd& rho,
                                                  const Eigen::VectorXd* guess) {
  const RestPose rest = computeRestPose(model, rho, guess);
  if (!rest.ok) return std::nullopt;
  if (checker.inCollision(model->configuration(rest.q, rho)).in_collision) return std::nullopt;
  return RestPoseRoadmap::Vertex{rho, rest.q};
}

// A collision-free rest pose whose goal error is at most `aim`, by damped Gauss-Newton
// (Levenberg-Marquardt) on the inputs from the rest vertex `from`.  The rest pose is followed by
// continuation: warm-started Newton solves that keep the taut strings taut (unless a tension
// goes negative), so the Jacobian d r(q*(rho), rho) / d rho comes from finite differences of
// the same branch of equilibria.  Inputs are scaled by their ranges and kept inside them.  The
// answer is confirmed by a full rest-pose solve (damped settling, then Newton) from it, which
// stays put only at a stable equilibrium.  nullopt if the error stops falling first (a
// collision, a joint stop, an unreachable target) or when `in_time` says stop.
std::optional<RestPoseRoadmap::Vertex> descendToGoal(const ModelPtr& model_ptr,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     const RestPoseRoadmap::Vertex& from,
                                                     double aim,
                                                     const std::function<bool()>& in_time) {
  const Model& model = *model_ptr;
  const int nk = model.nk();
  Eigen::VectorXd lower(nk), range(nk);
  for (int i = 0; i < nk; ++i) {
    lower[i] = model.kinematic[i].lower;
    range[i] = model.kinematic[i].upper - model.kinematic[i].lower;
  }
  RestPoseOptions continuation;
  continuation.max_settle_steps = 0;
  RestPose cur = computeRestPose(model_ptr, from.rho, &from.q, continuation);  // its taut set
  if (!cur.ok) return std::nullopt;
  Eigen::VectorXd cur_rho = from.rho;
  Eigen::VectorXd r = goal.poseResidual(cur.q, cur_rho);
  double err = goal.poseError(cur.q, cur_rho);
  double damping = 1e-3;  // relative to the largest diagonal entry of J J^T
  Eigen::MatrixXd J(r.size(), nk);
  for (int iteration = 0; iteration < 20 && err > aim && in_time(); ++iteration) {
    continuation.continue_from = &cur;
    for (int i = 0; i < nk; ++i) {
      const double h = cur_rho[i] + 1e-5 * range[i] > lower[i] + range[i] ? -1e-5 : 1e-5;
      Eigen::VectorXd rho = cur_rho;
      rho[i] += h * range[i];
      const RestPose rest = computeRestPose(model_ptr, rho, &cur.q, continuation);
      if (rest.ok)
        J.col(i) = (goal.poseResidual(rest.q, rho) - r) / h;
      else
        J.col(i).setZero();
    }
    const Eigen::MatrixXd JJt = J * J.transpose();
    const double scale = std::max(JJt.diagonal().maxCoeff(), 1e-12);
    bool improved = false;
    while (!improved && damping < 1e2 && in_time()) {
      Eigen::MatrixXd A = JJt;
      A.diagonal().array() += damping * scale;
      Eigen::VectorXd dx = J.transpose() * A.ldlt().solve(-r);
      const double big = dx.cwiseAbs().maxCoeff();
      if (big > 0.1) dx *= 0.1 / big;  // trust region: a tenth of any range per iteration
      const Eigen::VectorXd rho =
          (cur_rho + dx.cwiseProduct(range)).cwiseMax(lower).cwiseMin(lower + range);
      RestPose next = computeRestPose(model_ptr, rho, &cur.q, continuation);
      const double e = next.ok ? goal.poseError(next.q, rho) : err;
      if (e < err && !checker.inCollision(model.configuration(next.q, rho)).in_collision) {
        cur = std::move(next);
        cur_rho = rho;
        err = e;
        r = goal.poseResidual(cur.q, cur_rho);
        damping = std::max(1e-6, damping / 4);
        improved = true;
      } else {
        damping *= 8;
      }
    }
    if (!improved) break;
  }
  if (err > aim) return std::nullopt;
  auto v = restVertex(model_ptr, checker, cur_rho, &cur.q);
  if (!v || goal.poseError(v->q, v->rho) > aim) return std::nullopt;
  return v;
}

// The same by a local random search (for when Gauss-Newton stalls): Gaussian steps on the
// inputs, kept when the rest pose gets nearer to the goal, narrowed when it does not.
std::optional<RestPoseRoadmap::Vertex> randomDescent(const ModelPtr& model_ptr,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     RestPoseRoadmap::Vertex cur, double aim,
                                                     std::mt19937_64& rng,
                                                     const std::function<bool()>& in_time) {
  const Model& model = *model_ptr;
  std::normal_distribution<double> gauss(0.0, 1.0);
  double err = goal.poseError(cur.q, cur.rho), sigma = 0.25;
  for (int it = 0; it < 60 && err > aim && in_time(); ++it) {
    Eigen::VectorXd rho = cur.rho;
    for (int i = 0; i < model.nk(); ++i) {
      const auto& kv = model.kinematic[i];
      rho[i] =
          std::clamp(rho[i] + sigma * (kv.upper - kv.lower) * gauss(rng) / 4.0, kv.lower, kv.upper);
    }
    auto v = restVertex(model_ptr, checker, rho, &cur.q);
    if (!v) continue;
    const double e = goal.poseError(v->q, v->rho);
    if (e < err) {
      cur = *v;
      err = e;
    } else {
      sigma = std::max(0.02, sigma * 0.9);
    }
  }
  if (err <= aim) return cur;
  return std::nullopt;
}

// The k nearest vertices to rho by the speed-limit time metric (excluding `self`).
std::vector<int> nearest(const Model& model, const std::vector<RestPoseRoadmap::Vertex>& vs,
                         const Eigen::VectorXd& rho, int k, int self) {
  std::vector<std::pair<double, int>> d;
  for (int i = 0; i < static_cast<int>(vs.size()); ++i)
    if (i != self) d.emplace_back(timeLowerBound(model, rho, vs[i].rho), i);
  const int m = std::min<int>(k, static_cast<int>(d.size()));
  std::partial_sort(d.begin(), d.begin() + m, d.end());
  std::vector<int> out;
  for (int i = 0; i < m; ++i) out.push_back(d[i].second);
  return out;
}

void addEdgePair(BGraph& g, const Model& model, const std::vector<RestPoseRoadmap::Vertex>& vs,
                 int a, int b, const RoadmapOptions& opt) {
  for (auto [from, to] : {std::pair<int, int>{a, b}, std::pair<int, int>{b, a}}) {
    if (boost::edge(from, to, g).second) continue;
    EdgeProps e;
    e.move_s = moveDuration(model, vs[from].rho, vs[to].rho, opt.step_s, opt.slowdown);
    e.cost = e.move_s + 0.25 * opt.settle_max_s;  // until simulated
    boost::add_edge(from, to, e, g);
  }
}

struct FoundGoal {};

struct GoalVisitor : boost::default_astar_visitor {
  int goal;
  explicit GoalVisitor(int g) : goal(g) {}
  template <class G>
  void examine_vertex(typename boost::graph_traits<G>::vertex_descriptor u, const G&) {
    if (static_cast<int>(u) == goal) throw FoundGoal{};
  }
};

std::uint64_t fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void put(std::ostream& os, const Eigen::Isometry3d& T) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) os << T(i, j) << ' ';
}
void put(std::ostream& os, const Shape& s) {
  os << int(s.type) << ' ' << s.radius_m << ' ' << s.length_m << ' ' << s.size_m.transpose() << ' '
     << s.normal.transpose() << ' ' << s.offset_m << ' ' << s.mesh_scale.transpose() << ' ';
}

}  // namespace

std::string RoadmapOptions::describe() const {
  std::ostringstream os;
  os << std::setprecision(9) << "vertices=" << vertices << " neighbours=" << neighbours
     << " seed=" << seed << " step_s=" << step_s << " slowdown=" << slowdown
     << " settle_max_s=" << settle_max_s << " settle_tolerance=" << settle_tolerance
     << " settle_energy_J=" << settle_energy_J;
  return os.str();
}

std::string RestPoseRoadmap::fingerprint(const CollisionModel& collision) {
  const Model& m = collision.model();
  const Scene& sc = collision.scene();
  std::ostringstream os;
  os << std::setprecision(12) << m.name << ' ' << m.gravity_mps2 << ' ';
  put(os, m.stage_pose);
  for (const auto& v : m.dynamic)
    os << v.name << ' ' << v.damping << ' ' << v.limit.lower << ' ' << v.limit.upper << ' '
       << v.limit.stiffness << ' ' << v.limit.damping << ' ';
  for (const auto& v : m.kinematic)
    os << v.name << ' ' << v.lower << ' ' << v.upper << ' ' << v.max_speed << ' ' << v.max_accel
       << ' ';
  for (const auto& f : m.frames) {
    os << f.name << ' ' << f.parent << ' ' << int(f.type) << ' ' << f.axis.transpose() << ' '
       << f.variable << ' ';
    put(os, f.offset);
  }
  for (const auto& x : m.masses)
    os << x.frame << ' ' << x.mass_kg << ' ' << x.com_m.transpose() << ' '
       << x.inertia_kgm2.diagonal().transpose() << ' ';
  for (const auto& s : m.strings)
    os << s.puppet_frame << ' ' << s.puppet_point_m.transpose() << ' ' << s.rig_frame << ' '
       << s.rig_point_m.transpose() << ' ' << s.length_variable << ' ' << s.length_m << ' ';
  for (const auto& g : m.geometry) {
    os << g.frame << ' ';
    put(os, g.shape);
    put(os, g.pose);
  }
  const std::uint64_t model_hash = fnv(os.str());
  std::ostringstream ss;
  ss << std::setprecision(12) << sc.name << ' ';
  for (const auto& o : sc.obstacles) {
    ss << o.name << ' ';
    put(ss, o.shape);
    put(ss, o.pose);
    if (o.mesh) ss << o.mesh->vertices.size() << ' ' << o.mesh->triangles.size() << ' ';
  }
  if (sc.bounds) ss << sc.bounds->min_m.transpose() << ' ' << sc.bounds->max_m.transpose();
  const CollisionOptions& co = collision.options();
  ss << co.string_radius_m << co.check_strings << co.check_self << co.check_strings_vs_links
     << co.check_bounds;
  std::ostringstream out;
  out << m.name << '-' << std::hex << std::setw(16) << std::setfill('0') << model_hash << ' '
      << sc.name << '-' << std::setw(16) << fnv(ss.str());
  return out.str();
}

RestPoseRoadmap::RestPoseRoadmap(CollisionModelPtr collision, RoadmapOptions options)
    : collision_(std::move(collision)),
      options_(std::move(options)),
      graph_(std::make_shared<Graph>()) {}

std::vector<RestPoseRoadmap::Edge> RestPoseRoadmap::edges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Edge> out;
  for (auto [it, end] = boost::edges(graph_->g); it != end; ++it) {
    const EdgeProps& p = graph_->g[*it];
    out.push_back({static_cast<int>(boost::source(*it, graph_->g)),
                   static_cast<int>(boost::target(*it, graph_->g)), p.move_s, p.settle_s, p.state});
  }
  return out;
}

std::shared_ptr<RestPoseRoadmap> RestPoseRoadmap::build(
    CollisionModelPtr collision, const RoadmapOptions& options,
    const std::function<void(int, double)>& progress, const std::function<bool()>& cancelled) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.vertices < 2) throw std::invalid_argument("roadmap: vertices must be >= 2");
  if (options.neighbours < 1) throw std::invalid_argument("roadmap: neighbours must be >= 1");
  std::shared_ptr<RestPoseRoadmap> rm(new RestPoseRoadmap(collision, options));
  const ModelPtr model_ptr = collision->modelPtr();
  const Model& model = *model_ptr;
  CollisionChecker checker(collision);
  std::mt19937_64 rng(options.seed);
  // The default inputs' rest pose first: the home pose, where most plans start.
  auto home = restVertex(model_ptr, checker, model.defaultInputs(), nullptr);
  if (!home)
    throw std::runtime_error("roadmap: the rest pose of the default inputs is in collision");
  rm->vertices_.push_back(*home);
  EdgeSimulator sim(collision, options);
  struct CheckedEdge {
    int from, to;
    EdgeProps props;
  };
  std::vector<CheckedEdge> checked;
  const long max_attempts = 50L * options.vertices;
  auto last_report = t0;
  for (long attempt = 0;
       static_cast<int>(rm->vertices_.size()) < options.vertices && attempt < max_attempts;
       ++attempt) {
    if (cancelled && cancelled()) throw std::runtime_error("roadmap: cancelled");
    if (secondsSince(t0) > options.build_time_limit_s) break;
    // Half the samples uniform over the actuator ranges (reached from the home pose), half near
    // a vertex already kept (an eighth of each range, reached from that vertex): rest poses far
    // apart rarely connect by one settling move, so the roadmap grows outwards in reachable
    // steps as well as covering the space.  Either way the move that found the vertex is a
    // checked edge.
    Eigen::VectorXd rho(model.nk());
    const bool near = std::uniform_real_distribution<double>()(rng) < 0.5;
    const int base = near ? std::uniform_int_distribution<int>(
                                0, static_cast<int>(rm->vertices_.size()) - 1)(rng)
                          : 0;
    for (int i = 0; i < model.nk(); ++i) {
      const KinematicVariable& kv = model.kinematic[i];
      if (near)
        rho[i] =
            std::clamp(rm->vertices_[base].rho[i] +
                           (kv.upper - kv.lower) / 8.0 * std::normal_distribution<double>()(rng),
                       kv.lower, kv.upper);
      else
        rho[i] = std::uniform_real_distribution<double>(kv.lower, kv.upper)(rng);
    }
    if (auto found = sim.reach(rm->vertices_[base].rho, rm->vertices_[base].q, rho)) {
      rm->vertices_.push_back(found->first);
      EdgeProps e;
      e.move_s =
          moveDuration(model, rm->vertices_[base].rho, rho, options.step_s, options.slowdown);
      e.settle_s = found->second.settle_s;
      e.state = EdgeState::Valid;
      e.cost = e.move_s + e.settle_s;
      checked.push_back({base, static_cast<int>(rm->vertices_.size()) - 1, e});
    }
    if (progress && std::chrono::steady_clock::now() - last_report > std::chrono::seconds(1)) {
      last_report = std::chrono::steady_clock::now();
      progress(static_cast<int>(rm->vertices_.size()), secondsSince(t0));
    }
  }
  if (rm->vertices_.size() < 2)
    throw std::runtime_error("roadmap: fewer than two collision-free rest poses found in " +
                             std::to_string(secondsSince(t0)) + " s");
  BGraph& g = rm->graph_->g;
  g = BGraph(rm->vertices_.size());
  for (const CheckedEdge& e : checked) boost::add_edge(e.from, e.to, e.props, g);
  for (int i = 0; i < static_cast<int>(rm->vertices_.size()); ++i)
    for (int j : nearest(model, rm->vertices_, rm->vertices_[i].rho, options.neighbours, i))
      addEdgePair(g, model, rm->vertices_, i, j, options);
  rm->build_time_s_ = secondsSince(t0);
  return rm;
}

// ---- Query ----------------------------------------------------------------------------------

RestPoseRoadmap::QueryResult RestPoseRoadmap::query(const Eigen::VectorXd& start_q,
                                                    const Eigen::VectorXd& start_qdot,
                                                    const Eigen::VectorXd& start_rho,
                                                    GoalEvaluator& goal, double time_limit_s,
                                                    unsigned long seed,
                                                    const std::function<bool()>& cancelled) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  const ModelPtr model_ptr = collision_->modelPtr();
  const Model& model = *model_ptr;
  const int nd = model.nd();
  QueryResult out;
  EdgeSimulator sim(collision_, options_);
  CollisionChecker checker(collision_);
  std::mt19937_64 rng(seed);
  const Eigen::VectorXd zero_d = Eigen::VectorXd::Zero(nd),
                        zero_k = Eigen::VectorXd::Zero(model.nk());
  auto timeUp = [&] { return secondsSince(t0) > time_limit_s || (cancelled && cancelled()); };

  // The start: its rest pose, after settling if it is not at rest.
  const RestPose start_rest = computeRestPose(model_ptr, start_rho, &start_q);
  if (!start_rest.ok) {
    out.message = "start: no rest pose for the start inputs: " + start_rest.message;
    return out;
  }
  double start_hold_s = 0.0;
  if ((start_rest.q - start_q).cwiseAbs().maxCoeff() > 1e-6 ||
      start_qdot.cwiseAbs().maxCoeff() > 0) {
    start_hold_s = sim.settle(start_q, start_qdot, start_rho, start_rest.q, out.propagations);
    if (start_hold_s < 0) {
      out.message = "start: the puppet does not settle at the start inputs within " +
                    std::to_string(4 * options_.settle_max_s) + " s";
      return out;
    }
  }

  // The query graph: the roadmap without its failed edges, plus the start, the goal vertices
  // made for this query, and a virtual goal node.
  std::vector<Vertex> vs = vertices_;
  BGraph g(vs.size());
  for (auto [it, end] = boost::edges(graph_->g); it != end; ++it)
    if (graph_->g[*it].state != EdgeState::Invalid)
      boost::add_edge(boost::source(*it, graph_->g), boost::target(*it, graph_->g), graph_->g[*it],
                      g);
  const int permanent = static_cast<int>(vs.size());
  const int s = static_cast<int>(vs.size());
  vs.push_back({start_rho, start_rest.q});
  boost::add_vertex(g);
  for (int j : nearest(model, vs, start_rho, 2 * options_.neighbours, s))
    addEdgePair(g, model, vs, s, j, options_);

  auto goalError = [&](const Vertex& v) { return goal.poseError(v.q, v.rho); };
  std::vector<int> goals;
  for (int i = 0; i < static_cast<int>(vs.size()); ++i)
    if (goal.measure(vs[i].q, vs[i].rho, zero_d, zero_k).satisfied) goals.push_back(i);
  auto addQueryVertex = [&](const Vertex& v) {
    const int id = static_cast<int>(vs.size());
    vs.push_back(v);
    boost::add_vertex(g);
    for (int j : nearest(model, vs, v.rho, 2 * options_.neighbours, id))
      addEdgePair(g, model, vs, id, j, options_);
    return id;
  };
  if (goal.spec().kind == GoalSpec::Kind::RestOf) {
    const Eigen::VectorXd rho = goal.targetInputs(), q = goal.targetDynamic();
    if (auto v = restVertex(model_ptr, checker, rho, &q)) goals.push_back(addQueryVertex(*v));
  }
  // Joint and point goals: if no vertex meets the goal, look for a rest pose that does (seed
  // 001's query-phase expansion) from the vertices nearest to the goal: Gauss-Newton on the
  // inputs from each of the five nearest, then local random searches from them.  Another one is
  // looked for when the roadmap has no path to those found so far (their edges failed).  At
  // most a third of the time limit in all.
  const bool expand = goals.empty() && goal.spec().kind != GoalSpec::Kind::RestOf;
  std::vector<std::pair<double, int>> ranked;
  for (int i = 0; i < static_cast<int>(vs.size()); ++i) ranked.emplace_back(goalError(vs[i]), i);
  std::sort(ranked.begin(), ranked.end());
  const int starts = std::min<int>(5, static_cast<int>(ranked.size()));
  int attempts = 0;
  const auto findGoalVertex = [&] {
    const double budget = time_limit_s / 3.0;
    const auto searching = [&] { return !timeUp() && secondsSince(t0) < budget; };
    // Aim inside the tolerance: the swing settles onto the pose only to within numerics.
    const double aim = 0.9 * goal.tolerance();
    while (starts > 0 && searching()) {
      const int k = attempts++;
      const Vertex& from = vs[ranked[k % starts].second];
      auto v = k < starts ? descendToGoal(model_ptr, checker, goal, from, aim, searching)
                          : randomDescent(model_ptr, checker, goal, from, aim, rng, searching);
      if (v) {
        goals.push_back(addQueryVertex(*v));
        return true;
      }
    }
    return false;
  };
  if (expand) findGoalVertex();
  bool exact = !goals.empty();
  if (!exact) {
    // No vertex meets the goal: head for the one closest to it (an approximate plan).
    int best = -1;
    double best_err = std::numeric_limits<double>::infinity();
    for (int i = 0; i < static_cast<int>(vs.size()); ++i)
      if (i != s && goalError(vs[i]) < best_err) best_err = goalError(vs[i]), best = i;
    if (best < 0) {
      out.message = "no roadmap vertex to head for";
      return out;
    }
    goals.push_back(best);
  }
  if (std::find(goals.begin(), goals.end(), s) != goals.end()) {
    // Already there.
    out.found = true;
    out.exact = exact;
    out.goal_distance = goalError(vs[s]);
    out.inputs = RigTrajectory(options_.step_s, start_rho);
    appendHold(out.inputs, start_hold_s);
    out.path = {-1};
    return out;
  }

  // Search, check the unchecked edges of the path in order, repeat (seed 001 §IV-D).
  std::vector<int> path;
  while (true) {
    if (timeUp()) {
      out.message = "time limit reached while checking roadmap edges";
      return out;
    }
    // A virtual goal node G linked at zero cost from every goal vertex, there for this search
    // only (it is the last vertex, so removing it renumbers nothing).  Heuristic: the fastest
    // any move could reach some goal vertex.
    const int G = static_cast<int>(boost::add_vertex(g));
    for (int v : goals) {
      EdgeProps e;
      e.state = EdgeState::Valid;
      boost::add_edge(v, G, e, g);
    }
    std::vector<double> h(boost::num_vertices(g), 0.0);
    for (int v = 0; v < G; ++v) {
      h[v] = std::numeric_limits<double>::infinity();
      for (int gv : goals) h[v] = std::min(h[v], timeLowerBound(model, vs[v].rho, vs[gv].rho));
    }
    const std::size_t n = boost::num_vertices(g);
    std::vector<BGraph::vertex_descriptor> pred(n);
    std::vector<double> dist(n);
    bool reached = false;
    try {
      boost::astar_search(
          g, static_cast<BGraph::vertex_descriptor>(s),
          [&](BGraph::vertex_descriptor v) { return h[v]; },
          boost::predecessor_map(
              boost::make_iterator_property_map(pred.begin(), boost::get(boost::vertex_index, g)))
              .distance_map(boost::make_iterator_property_map(dist.begin(),
                                                              boost::get(boost::vertex_index, g)))
              .weight_map(boost::get(&EdgeProps::cost, g))
              .visitor(GoalVisitor(G)));
    } catch (const FoundGoal&) {
      reached = true;
    }
    boost::clear_vertex(G, g);
    boost::remove_vertex(G, g);
    if (!reached) {
      if (expand && findGoalVertex()) continue;
      out.message = "the roadmap has no (remaining) path from the start to the goal";
      return out;
    }
    path.clear();
    for (int v = static_cast<int>(pred[G]); v != s; v = static_cast<int>(pred[v]))
      path.push_back(v);
    path.push_back(s);
    std::reverse(path.begin(), path.end());
    bool all_valid = true;
    for (std::size_t k = 0; k + 1 < path.size(); ++k) {
      const int a = path[k], b = path[k + 1];
      auto [e, exists] = boost::edge(a, b, g);
      if (!exists || g[e].state == EdgeState::Valid) continue;
      const EdgeCheck c = sim.check(vs[a].rho, vs[a].q, vs[b].rho, vs[b].q);
      ++out.edges_validated;
      out.propagations += c.propagations;
      out.collision_checks += c.collision_checks;
      // Remember the verdict in the roadmap itself for edges between its own vertices.
      auto [pe, in_roadmap] = a < permanent && b < permanent
                                  ? boost::edge(a, b, graph_->g)
                                  : std::make_pair(BGraph::edge_descriptor(), false);
      if (c.ok) {
        g[e].state = EdgeState::Valid;
        g[e].settle_s = c.settle_s;
        g[e].cost = g[e].move_s + c.settle_s;
        if (in_roadmap) graph_->g[pe] = g[e];
      } else {
        ++out.edges_rejected;
        boost::remove_edge(a, b, g);
        if (in_roadmap) graph_->g[pe].state = EdgeState::Invalid;
        all_valid = false;
        break;
      }
      if (timeUp()) break;
    }
    if (all_valid) break;
  }

  // The plan: from the start, each move and a hold until settled, simulated as one motion.
  out.found = true;
  out.exact = exact;
  out.inputs = RigTrajectory(options_.step_s, start_rho);
  std::vector<Vertex> targets;
  for (int v : path) {
    targets.push_back(vs[v]);
    out.path.push_back(v == s ? -1 : (v < permanent ? v : -2));
  }
  if (!sim.assemble(start_q, start_qdot, out.inputs, targets, exact ? &goal : nullptr,
                    out.propagations))
    out.message = "the swing did not settle everywhere along the path within " +
                  std::to_string(2 * options_.settle_max_s) + " s";
  out.goal_distance = goalError(vs[path.back()]);
  if (!exact)
    out.message = "no rest pose in the roadmap meets the goal; went to the closest (error " +
                  std::to_string(out.goal_distance) + ")";
  return out;
}

// ---- Files ----------------------------------------------------------------------------------

void RestPoseRoadmap::save(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream os(tmp);
    if (!os) throw std::runtime_error(path + ": cannot write");
    os << std::setprecision(17);
    os << "marionette-roadmap 1\n";
    os << "fingerprint " << fingerprint(*collision_) << '\n';
    os << "options " << options_.describe() << '\n';
    os << "build_time_s " << build_time_s_ << '\n';
    const Model& m = collision_->model();
    os << "vertices " << vertices_.size() << ' ' << m.nk() << ' ' << m.nd() << '\n';
    for (const Vertex& v : vertices_) {
      for (int i = 0; i < v.rho.size(); ++i) os << v.rho[i] << ' ';
      for (int i = 0; i < v.q.size(); ++i) os << v.q[i] << (i + 1 < v.q.size() ? " " : "");
      os << '\n';
    }
    os << "edges " << boost::num_edges(graph_->g) << '\n';
    for (auto [it, end] = boost::edges(graph_->g); it != end; ++it) {
      const EdgeProps& p = graph_->g[*it];
      os << boost::source(*it, graph_->g) << ' ' << boost::target(*it, graph_->g) << ' ' << p.move_s
         << ' ' << p.settle_s << ' ' << int(p.state) << '\n';
    }
    if (!os) throw std::runtime_error(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(path + ": cannot replace the file");
}

std::shared_ptr<RestPoseRoadmap> RestPoseRoadmap::load(const std::string& path,
                                                       CollisionModelPtr collision) {
  std::ifstream is(path);
  if (!is) throw std::runtime_error(path + ": cannot open");
  int line_no = 0;
  std::string line;
  auto fail = [&](const std::string& what) -> std::runtime_error {
    return std::runtime_error(path + ":" + std::to_string(line_no) + ": " + what);
  };
  auto next = [&]() -> std::istringstream {
    if (!std::getline(is, line)) throw fail("unexpected end of file");
    ++line_no;
    return std::istringstream(line);
  };
  std::string word;
  int version = 0;
  if (!(next() >> word >> version) || word != "marionette-roadmap" || version != 1)
    throw fail("not a marionette roadmap (version 1)");
  std::string fp;
  {
    auto ls = next();
    ls >> word;
    std::getline(ls >> std::ws, fp);
    if (word != "fingerprint") throw fail("expected 'fingerprint'");
  }
  const std::string expected = fingerprint(*collision);
  if (fp != expected)
    throw fail("built for another model or scene (fingerprint '" + fp + "', this is '" + expected +
               "'); delete it or use another file");
  RoadmapOptions opt;
  {
    auto ls = next();
    ls >> word;
    if (word != "options") throw fail("expected 'options'");
    std::string kv;
    while (ls >> kv) {
      const auto eq = kv.find('=');
      const std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
      try {
        if (k == "vertices")
          opt.vertices = std::stoi(v);
        else if (k == "neighbours")
          opt.neighbours = std::stoi(v);
        else if (k == "seed")
          opt.seed = std::stoul(v);
        else if (k == "step_s")
          opt.step_s = std::stod(v);
        else if (k == "slowdown")
          opt.slowdown = std::stod(v);
        else if (k == "settle_max_s")
          opt.settle_max_s = std::stod(v);
        else if (k == "settle_tolerance")
          opt.settle_tolerance = std::stod(v);
        else if (k == "settle_energy_J")
          opt.settle_energy_J = std::stod(v);
        else
          throw fail("unknown option '" + k + "'");
      } catch (const std::logic_error&) {
        throw fail("option " + k + ": bad value '" + v + "'");
      }
    }
  }
  std::shared_ptr<RestPoseRoadmap> rm(new RestPoseRoadmap(collision, opt));
  {
    auto ls = next();
    if (!(ls >> word >> rm->build_time_s_) || word != "build_time_s")
      throw fail("expected 'build_time_s SECONDS'");
  }
  const Model& m = collision->model();
  std::size_t nv = 0;
  int nk = 0, nd = 0;
  if (!(next() >> word >> nv >> nk >> nd) || word != "vertices")
    throw fail("expected 'vertices N NK ND'");
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
  BGraph& g = rm->graph_->g;
  g = BGraph(nv);
  for (std::size_t i = 0; i < ne; ++i) {
    auto ls = next();
    std::size_t a, b;
    EdgeProps p;
    int state;
    if (!(ls >> a >> b >> p.move_s >> p.settle_s >> state) || a >= nv || b >= nv || state < 0 ||
        state > 2)
      throw fail("edge: expected FROM TO MOVE_S SETTLE_S STATE(0-2) with vertex indices < " +
                 std::to_string(nv));
    p.state = static_cast<EdgeState>(state);
    p.cost = p.move_s + (p.state == EdgeState::Valid ? p.settle_s : 0.25 * opt.settle_max_s);
    boost::add_edge(a, b, p, g);
  }
  return rm;
}

}  // namespace marionette
