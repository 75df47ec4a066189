// SPDX-License-Identifier: BSD-3-Clause
#include "performance_kinematics.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {
namespace {

constexpr double kJointWeight_m = 0.1;   // a joint target's radian weighs as 10 cm
constexpr double kStepWeight_m = 0.01;  // a move of an input's whole range weighs as 1 cm
constexpr int kIterations = 8;
// A continuation from a close pose needs few Newton iterations and few changes of its taut set;
// one that needs more fails fast (a failing one costs ~100 ms on marionette25, 180 contact rows).
constexpr int kContinuationIterations = 15;
constexpr int kContinuationPivots = 10;
// A trial step whose continuation fails settles this many damped steps (6 s) before its Newton
// polish, not to full stillness: a rejected trial costs ~30 ms, not ~0.1-0.6 s.
constexpr int kTrialSettleSteps = 300;
// The probes (KinematicSetup::probe_rest_poses): each input alone moved by these shares of its
// range, in frames whose points stay farther than kProbeAbove_m from their targets, each round
// followed by the descent, kProbeRounds a frame at most; a round whose best probe lowers the
// squared residual by less than kProbeGain (a millimetre's) ends them.  (The hop's head string
// goes slack-to-load within 5 % of its range; moves of 10 % and 15 % found nothing there.)
constexpr double kProbeSteps[] = {0.05, -0.05};
constexpr double kProbeAbove_m = 0.015;
constexpr int kProbeRounds = 3;
constexpr double kProbeGain = 1e-6;

// Where a rest pose is wanted when continuation from a nearby one fails.
enum class Fallback { Settle, ShortSettle, None };

class FrameSolver {
 public:
  FrameSolver(const KinematicSetup& setup, const TargetMotion& keys)
      : setup_(setup), model_(*setup.model), keys_(keys), data_(model_),
        checker_(setup.collision), probes_left_(setup.probe_rest_poses) {
    const int nk = model_.nk();
    lower_.resize(nk);
    range_.resize(nk);
    for (int i = 0; i < nk; ++i) {
      lower_[i] = model_.kinematic[i].lower;
      range_[i] = model_.kinematic[i].upper - model_.kinematic[i].lower;
    }
    for (const std::string& name : keys.points) points_.push_back(model_.pointIndex(name));
    for (const std::string& name : keys.variables) variables_.push_back(model_.variableIndex(name));
    free_.assign(nk, 1);
    for (int i : setup.disable) free_[i] = 0;
    // Where the calm points hang at the start inputs.
    if (setup.calm_weight > 0 && !setup.calm_points.empty()) {
      const RestPose rest = computeRestPose(setup.model, setup.start_inputs, nullptr,
                                            standingOn(setup.collision->contacts()));
      if (rest.ok) {
        forwardKinematics(model_, data_, model_.configuration(rest.q, setup.start_inputs));
        calm_weight_m_ = std::sqrt(setup.calm_weight);
        calm_reference_m_.resize(3, static_cast<Eigen::Index>(setup.calm_points.size()));
        for (std::size_t i = 0; i < setup.calm_points.size(); ++i) {
          const Point& p = model_.points[setup.calm_points[i]];
          calm_reference_m_.col(static_cast<Eigen::Index>(i)) =
              pointPosition(data_, p.frame, p.position_m);
        }
      }
    }
  }

  // The inputs of frame f with its targets, from `start`'s (fixed inputs set, the rest solved),
  // each move from the last frame's inputs costing a little.
  KinematicFrame solve(int f, const KinematicFrame& start, const Eigen::VectorXd& previous_rho) {
    frame_ = f;
    Eigen::VectorXd rho = start.rho;
    for (std::size_t v = 0; v < variables_.size(); ++v) {
      const int k = variables_[v] - model_.nd();
      if (k >= 0 && !std::isnan(keys_.values(f, static_cast<int>(v))) && free_[k])
        rho[k] = keys_.values(f, static_cast<int>(v));
    }
    previous_rho_ = previous_rho;
    // (A frame's start settles from the last frame's pose: continued from its rest pose instead,
    // marionette25's two-hand wave ended 1.3 cm off its hands' targets, not 0.3.)
    RestPose cur = restPose(rho, start.q, nullptr, Fallback::Settle);
    if (!cur.ok) return finish(start.rho, restPose(start.rho, start.q, nullptr, Fallback::Settle));
    Descent at{std::move(rho), std::move(cur), 0.0, 0.0};
    at.clearance = stageClearance(at.rest.q, at.rho);
    at.err = residual(at.rest.q, at.rho).squaredNorm();
    bool cut_short = !descend(at);
    const bool ran_out_before = probes_ran_out_;
    // (No probes asked, none run: a budget of 0 is not one spent.)
    for (int round = 0; round < kProbeRounds && !cut_short && setup_.probe_rest_poses > 0;
         ++round) {
      // (NaN, a point without a target at this frame, is not above.)
      if (!(pointErrors(at.rest.q, at.rho).array() > kProbeAbove_m).any() || !probe(at)) break;
      cut_short = !descend(at);
    }
    KinematicFrame out = finish(at.rho, at.rest);
    out.cut_short = cut_short;
    out.probes_ran_out = probes_ran_out_ && !ran_out_before;
    return out;
  }

 private:
  // Where a frame's solve is: its inputs, their rest pose, the residual's squared norm and the
  // rest pose's clearance to the stage.
  struct Descent {
    Eigen::VectorXd rho;
    RestPose rest;
    double err, clearance;
  };

  // A trial's rest pose taken when it lowers the residual and keeps the stage clearance (the
  // margin, or what the frame already keeps when less).
  bool better(Descent& at, const Eigen::VectorXd& trial, RestPose&& next) {
    if (!next.ok) return false;
    const double e = residual(next.q, trial).squaredNorm();
    if (!(e < at.err)) return false;
    const double c = stageClearance(next.q, trial);
    if (c < std::min(setup_.margin_m, at.clearance)) return false;
    at = Descent{trial, std::move(next), e, c};
    return true;
  }

  // Damped Gauss-Newton on the inputs, the Jacobian by forward differences through the rest
  // pose's continuation, kIterations at most.  False when the wall-clock cap stopped it.
  bool descend(Descent& at) {
    const int nk = model_.nk();
    Eigen::VectorXd r = residual(at.rest.q, at.rho);
    Eigen::MatrixXd J(r.size(), nk);
    double damping = 1e-3;
    for (int it = 0; it < kIterations; ++it) {
      if (setup_.in_time && !setup_.in_time()) return false;
      for (int i = 0; i < nk; ++i) {
        J.col(i).setZero();
        if (!free_[i] || setFromTarget(i)) continue;
        const double h = at.rho[i] + 1e-5 * range_[i] > lower_[i] + range_[i] ? -1e-5 : 1e-5;
        Eigen::VectorXd trial = at.rho;
        trial[i] += h * range_[i];
        // (A column whose continuation fails is left out of this iteration's step.)
        const RestPose rest = restPose(trial, at.rest.q, &at.rest, Fallback::None);
        if (rest.ok) J.col(i) = (residual(rest.q, trial) - r) / h;
      }
      const Eigen::MatrixXd JJt = J * J.transpose();
      const double scale = std::max(JJt.diagonal().maxCoeff(), 1e-12);
      bool improved = false;
      while (!improved && damping < 1e2) {
        Eigen::MatrixXd A = JJt;
        A.diagonal().array() += damping * scale;
        Eigen::VectorXd dx = J.transpose() * A.ldlt().solve(-r);
        const double big = dx.cwiseAbs().maxCoeff();
        if (!(big > 1e-9)) break;
        if (big > 0.1) dx *= 0.1 / big;  // a tenth of any range per iteration
        const Eigen::VectorXd trial =
            (at.rho + dx.cwiseProduct(range_)).cwiseMax(lower_).cwiseMin(lower_ + range_);
        const double before = at.err;
        if (better(at, trial, restPose(trial, at.rest.q, &at.rest, Fallback::ShortSettle))) {
          r = residual(at.rest.q, at.rho);
          damping = std::max(1e-6, damping / 4);
          improved = true;
          if (before - at.err < 1e-8) it = kIterations;  // (1e-4 m of error squared: done)
        } else {
          damping *= 8;
        }
      }
      if (!improved) break;
    }
    return true;
  }

  // Where the descent stalls short of the targets on a flat stretch (PuppetCopter's head string
  // shortened lifts nothing until the shoulder strings go slack, and the difference quotient sees
  // no slope): each free input moved by kProbeSteps of its range alone, its rest pose continued
  // or settled, and the best that lowers the residual taken.  False when none does by
  // kProbeGain, or the budget ran out first.
  bool probe(Descent& at) {
    Descent best = at;
    bool found = false;
    for (int i = 0; i < model_.nk() && !probes_ran_out_; ++i) {
      if (!free_[i] || setFromTarget(i)) continue;
      for (double step : kProbeSteps) {
        Eigen::VectorXd trial = at.rho;
        trial[i] = std::clamp(at.rho[i] + step * range_[i], lower_[i], lower_[i] + range_[i]);
        if (trial[i] == at.rho[i]) continue;
        if (probes_left_ == 0) {
          probes_ran_out_ = true;
          break;
        }
        --probes_left_;
        found |= better(best, trial, restPose(trial, at.rest.q, &at.rest, Fallback::ShortSettle));
      }
    }
    found = found && at.err - best.err >= kProbeGain;
    if (found) at = std::move(best);
    return found;
  }

  // The frame's point errors |point - target| (m; NaN without a target).
  Eigen::VectorXd pointErrors(const Eigen::VectorXd& q, const Eigen::VectorXd& rho) {
    forwardKinematics(model_, data_, model_.configuration(q, rho));
    Eigen::VectorXd error_m(static_cast<Eigen::Index>(points_.size()));
    for (std::size_t i = 0; i < points_.size(); ++i) {
      const Eigen::Vector3d target = keys_.position(frame_, static_cast<int>(i));
      const Point& p = model_.points[points_[i]];
      error_m[static_cast<Eigen::Index>(i)] =
          target.allFinite() ? (pointPosition(data_, p.frame, p.position_m) - target).norm()
                             : std::numeric_limits<double>::quiet_NaN();
    }
    return error_m;
  }

  bool setFromTarget(int input) const {
    for (std::size_t v = 0; v < variables_.size(); ++v)
      if (variables_[v] - model_.nd() == input &&
          !std::isnan(keys_.values(frame_, static_cast<int>(v))))
        return true;
    return false;
  }

  // The rest pose of rho by continuation from `from` (when given), else as `fallback` says.
  RestPose restPose(const Eigen::VectorXd& rho, const Eigen::VectorXd& guess, const RestPose* from,
                    Fallback fallback) {
    // (Standing on what the puppet may touch: the scene's floor, its own links.)
    RestPoseOptions standing = standingOn(setup_.collision->contacts());
    if (from) {
      RestPoseOptions continuation = standing;
      continuation.max_settle_steps = 0;
      continuation.continue_from = from;
      continuation.max_newton_iterations = kContinuationIterations;
      continuation.max_pivots = kContinuationPivots;
      RestPose rest = computeRestPose(setup_.model, rho, &guess, continuation);
      if (rest.ok || fallback == Fallback::None) return rest;
      if (fallback == Fallback::ShortSettle) standing.max_settle_steps = kTrialSettleSteps;
    }
    return computeRestPose(setup_.model, rho, &guess, standing);
  }

  double stageClearance(const Eigen::VectorXd& q, const Eigen::VectorXd& rho) {
    const ClearanceResult c = checker_.clearance(model_.configuration(q, rho));
    if (!(c.distance_m > 0)) return -1.0;  // touching anything (itself too)
    last_nearest_ = c.stage_pair.describe();
    return c.stage_distance_m;
  }

  // Point errors (m), joint errors (weighted), the step from the last frame's inputs, and the
  // calm points' distances from where they hang (weighted).
  Eigen::VectorXd residual(const Eigen::VectorXd& q, const Eigen::VectorXd& rho) {
    forwardKinematics(model_, data_, model_.configuration(q, rho));
    const int nk = model_.nk();
    const auto calm = calm_reference_m_.cols();
    Eigen::VectorXd r(3 * points_.size() + variables_.size() + nk + 3 * calm);
    int k = 0;
    for (std::size_t i = 0; i < points_.size(); ++i) {
      const Eigen::Vector3d target = keys_.position(frame_, static_cast<int>(i));
      const Point& p = model_.points[points_[i]];
      const Eigen::Vector3d e =
          target.allFinite() ? Eigen::Vector3d(pointPosition(data_, p.frame, p.position_m) - target)
                             : Eigen::Vector3d::Zero();
      r.segment<3>(k) = e;
      k += 3;
    }
    for (std::size_t v = 0; v < variables_.size(); ++v, ++k) {
      const double target = keys_.values(frame_, static_cast<int>(v));
      r[k] = variables_[v] < model_.nd() && !std::isnan(target)
                 ? (q[variables_[v]] - target) * kJointWeight_m
                 : 0.0;
    }
    r.segment(k, nk) = kStepWeight_m * (rho - previous_rho_).cwiseQuotient(range_);
    k += nk;
    for (Eigen::Index i = 0; i < calm; ++i, k += 3) {
      const Point& p = model_.points[setup_.calm_points[i]];
      r.segment<3>(k) = calm_weight_m_ * (pointPosition(data_, p.frame, p.position_m) -
                                          calm_reference_m_.col(i));
    }
    return r;
  }

  KinematicFrame finish(const Eigen::VectorXd& rho, const RestPose& rest) {
    KinematicFrame out;
    out.rho = rho;
    out.q = rest.ok ? rest.q : model_.initialDynamic();
    out.stage_clearance_m = stageClearance(out.q, rho);
    out.nearest = last_nearest_;
    out.error_m = pointErrors(out.q, rho);
    return out;
  }

  const KinematicSetup& setup_;
  const Model& model_;
  const TargetMotion& keys_;
  DynamicsData data_;
  CollisionChecker checker_;
  Eigen::VectorXd lower_, range_, previous_rho_;
  Eigen::Matrix3Xd calm_reference_m_;  // the calm points where they hang (none: no columns)
  double calm_weight_m_ = 0.0;
  std::vector<int> points_, variables_;
  std::vector<char> free_;
  int frame_ = 0;
  std::string last_nearest_;
  int probes_left_;  // of setup.probe_rest_poses
  bool probes_ran_out_ = false;
};

}  // namespace

std::vector<KinematicFrame> solveKeyFrames(const KinematicSetup& setup, const TargetMotion& keys) {
  FrameSolver solver(setup, keys);
  std::vector<KinematicFrame> frames;
  KinematicFrame start;
  start.rho = setup.start_inputs;
  const RestPose rest =
      computeRestPose(setup.model, start.rho, nullptr, standingOn(setup.collision->contacts()));
  start.q = rest.ok ? rest.q : setup.model->initialDynamic();
  for (int f = 0; f < keys.frames(); ++f) {
    const KinematicFrame& previous = f == 0 ? start : frames.back();
    frames.push_back(solver.solve(f, previous, previous.rho));
  }
  return frames;
}

std::vector<KinematicFrame> refineKeyFrames(const KinematicSetup& setup, const TargetMotion& keys,
                                            const std::vector<KinematicFrame>& frames,
                                            const std::vector<char>& refine) {
  FrameSolver solver(setup, keys);
  std::vector<KinematicFrame> out;
  for (int f = 0; f < keys.frames(); ++f) {
    if (!refine[f]) {
      out.push_back(frames[f]);
      continue;
    }
    const Eigen::VectorXd previous_rho = f == 0 ? setup.start_inputs : out.back().rho;
    out.push_back(solver.solve(f, frames[f], previous_rho));
  }
  return out;
}

}  // namespace marionette::detail
