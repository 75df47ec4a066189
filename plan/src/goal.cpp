// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/plan/goal.hpp"

#include <Eigen/Cholesky>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette {

// ---- GoalEvaluator ------------------------------------------------------------------------

GoalEvaluator::GoalEvaluator(ModelPtr model, GoalSpec spec)
    : model_(std::move(model)), spec_(std::move(spec)), data_(*model_) {
  const Model& m = *model_;
  const int nd = m.nd(), nk = m.nk();
  tolerance_ = spec_.effectiveTolerance();
  target_q_ = Eigen::VectorXd::Constant(nd, std::numeric_limits<double>::quiet_NaN());
  target_rho_ = Eigen::VectorXd();
  q_full_.resize(m.nq());
  v_.resize(nd);
  zero_v_ = Eigen::VectorXd::Zero(nd);
  auto names = [&](bool dynamic) {
    return joinNames(dynamic ? itemNames(m.dynamic) : itemNames(m.kinematic));
  };
  switch (spec_.kind) {
    case GoalSpec::Kind::Joint:
      if (spec_.values.empty()) throw FieldError("goal.values", "names no variable");
      for (const auto& [name, value] : spec_.values) {
        const int i = m.variableIndex(name);
        if (i < 0 || i >= nd)
          throw FieldError(
              "goal.values" + fieldKey(name),
              "'" + name + "' is not a dynamic variable of '" + m.name + "' (" + names(true) + ")");
        const auto& lim = m.dynamic[i].limit;
        if (lim.isStop() && (value < lim.lower || value > lim.upper))
          throw FieldError("goal.values" + fieldKey(name),
                           name + " = " + std::to_string(value) + " is outside its limits");
        target_q_[i] = value;
        goal_vars_.push_back(i);
      }
      break;
    case GoalSpec::Kind::RestOf: {
      target_rho_ = m.defaultInputs();
      for (const auto& [name, value] : spec_.values) {
        const int i = m.variableIndex(name);
        if (i < nd)
          throw FieldError("goal.values" + fieldKey(name),
                           "rest-of: '" + name + "' is not a kinematic variable of '" + m.name +
                               "' (" + names(false) + ")");
        const auto& kv = m.kinematic[i - nd];
        if (value < kv.lower || value > kv.upper)
          throw FieldError("goal.values" + fieldKey(name),
                           "rest-of: " + name + " = " + std::to_string(value) +
                               " is outside its range [" + std::to_string(kv.lower) + ", " +
                               std::to_string(kv.upper) + "]");
        target_rho_[i - nd] = value;
      }
      const bool guessed = spec_.rest_guess_q.size() == nd;
      const RestPoseOptions options =
          spec_.rest_contacts ? standingOn(spec_.rest_contacts) : RestPoseOptions{};
      RestPose rest =
          computeRestPose(model_, target_rho_, guessed ? &spec_.rest_guess_q : nullptr, options);
      // (A guess whose settling ends where Newton's method does not converge: the model's own.
      // That may be another equilibrium; the plan's end is verified against it, so a motion that
      // ends elsewhere is approximate, never exact by mistake.)
      if (!rest.ok && guessed) rest = computeRestPose(model_, target_rho_, nullptr, options);
      if (!rest.ok) throw FieldError("goal.values", "rest-of: no rest pose: " + rest.message);
      target_q_ = rest.q;
      for (int i = 0; i < nd; ++i) goal_vars_.push_back(i);
      break;
    }
    case GoalSpec::Kind::Point: {
      if (spec_.points.empty()) throw FieldError("goal.points", "names no point");
      const Eigen::Isometry3d stage_to_world = m.stage_pose.inverse();
      for (std::size_t k = 0; k < spec_.points.size(); ++k) {
        const GoalSpec::PointTarget& t = spec_.points[k];
        const int i = m.pointIndex(t.point);
        if (i < 0)
          throw FieldError("goal.points[" + std::to_string(k) + "].point",
                           "'" + t.point + "' is not a point of '" + m.name + "' (" +
                               joinNames(itemNames(m.points)) + ")");
        point_index_.push_back(i);
        point_target_world_.push_back(stage_to_world * t.position_m);
      }
      break;
    }
  }
  (void)nk;
}

Eigen::VectorXd GoalEvaluator::poseResidual(const Eigen::VectorXd& q_d,
                                            const Eigen::VectorXd& rho) {
  const Model& m = *model_;
  if (spec_.kind == GoalSpec::Kind::Point) {
    Eigen::VectorXd r(3 * point_index_.size());
    q_full_ << q_d, rho;
    forwardKinematics(m, data_, q_full_);
    for (std::size_t k = 0; k < point_index_.size(); ++k) {
      const Point& p = m.points[point_index_[k]];
      r.segment<3>(3 * k) = pointPosition(data_, p.frame, p.position_m) - point_target_world_[k];
    }
    return r;
  }
  const bool with_inputs = spec_.kind == GoalSpec::Kind::RestOf;
  Eigen::VectorXd r(goal_vars_.size() + (with_inputs ? rho.size() : 0));
  for (std::size_t k = 0; k < goal_vars_.size(); ++k)
    r[k] = jointDifference(m, goal_vars_[k], q_d[goal_vars_[k]], target_q_[goal_vars_[k]]);
  if (with_inputs) r.tail(rho.size()) = rho - target_rho_;
  return r;
}

double GoalEvaluator::poseError(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho) {
  const Eigen::VectorXd r = poseResidual(q_d, rho);
  if (spec_.kind != GoalSpec::Kind::Point) return r.size() ? r.cwiseAbs().maxCoeff() : 0.0;
  double err = 0.0;
  for (int k = 0; k + 2 < r.size(); k += 3) err = std::max(err, r.segment<3>(k).norm());
  return err;
}

double GoalEvaluator::kineticEnergy(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho,
                                    const Eigen::VectorXd& qdot) {
  q_full_ << q_d, rho;
  forwardKinematics(*model_, data_, q_full_);
  computeLagrangian(*model_, data_, q_full_, zero_v_, LagrangianOrder::MassMatrix);
  return 0.5 * qdot.dot(data_.M * qdot);
}

double GoalEvaluator::kineticEnergyFromMomentum(const Eigen::VectorXd& q_d,
                                                const Eigen::VectorXd& rho,
                                                const Eigen::VectorXd& p, double dt_s) {
  q_full_ << q_d, rho;
  return marionette::kineticEnergyFromMomentum(*model_, data_, q_full_, p, dt_s);
}

GoalEvaluator::Measure GoalEvaluator::finish(double pose_error, double kinetic_J,
                                             const Eigen::VectorXd& rho_dot) {
  Measure out;
  out.pose_error = pose_error;
  out.satisfied = pose_error <= tolerance_;
  out.distance = pose_error;
  if (spec_.at_rest) {
    out.kinetic_J = kinetic_J;
    out.rig_speed = rho_dot.size() ? rho_dot.cwiseAbs().maxCoeff() : 0.0;
    const bool still = kinetic_J <= spec_.rest_energy_J && out.rig_speed <= 1e-9;
    out.satisfied = out.satisfied && still;
    out.distance += tolerance_ * std::max(0.0, kinetic_J / spec_.rest_energy_J - 1.0);
    if (out.rig_speed > 1e-9) out.distance += tolerance_ * 0.5;  // the rig must stop too
  }
  return out;
}

GoalEvaluator::Measure GoalEvaluator::measure(const Eigen::VectorXd& q_d,
                                              const Eigen::VectorXd& rho,
                                              const Eigen::VectorXd& qdot,
                                              const Eigen::VectorXd& rho_dot) {
  const double e = poseError(q_d, rho);
  return finish(e, spec_.at_rest ? kineticEnergy(q_d, rho, qdot) : 0.0, rho_dot);
}

GoalEvaluator::Measure GoalEvaluator::measureFromMomentum(const Eigen::VectorXd& q_d,
                                                          const Eigen::VectorXd& rho,
                                                          const Eigen::VectorXd& p,
                                                          const Eigen::VectorXd& rho_dot,
                                                          double dt_s) {
  const double e = poseError(q_d, rho);
  return finish(e, spec_.at_rest ? kineticEnergyFromMomentum(q_d, rho, p, dt_s) : 0.0, rho_dot);
}

double jointDifference(const Model& model, int i, double a, double b) {
  const double d = a - b;
  const JointLimit& lim = model.dynamic[i].limit;
  if (model.frames[model.dynamic_frame[i]].type != JointType::Rotate || std::isfinite(lim.lower) ||
      std::isfinite(lim.upper))
    return d;
  return std::remainder(d, 2.0 * M_PI);
}

double maxJointDifference(const Model& model, const Eigen::VectorXd& q_a,
                          const Eigen::VectorXd& q_b) {
  double m = 0.0;
  for (int i = 0; i < model.nd(); ++i)
    m = std::max(m, std::abs(jointDifference(model, i, q_a[i], q_b[i])));
  return m;
}

double kineticEnergyFromMomentum(const Model& model, DynamicsData& data,
                                 const Eigen::VectorXd& q_full, const Eigen::VectorXd& p,
                                 double dt_s) {
  // p_k = M v + dt/2 dL/dq to second order, so v = M^-1 (p - dt/2 dL/dq); at rest
  // p = dt/2 dL/dq exactly and v = 0.
  forwardKinematics(model, data, q_full);
  computeLagrangian(model, data, q_full, Eigen::VectorXd::Zero(model.nd()),
                    LagrangianOrder::MassMatrix);
  const Eigen::VectorXd v = data.M.llt().solve(p - 0.5 * dt_s * data.Lq);
  return 0.5 * v.dot(data.M * v);
}

Eigen::Vector3d pointInStage(const Model& model, DynamicsData& data, const Eigen::VectorXd& q_full,
                             int point) {
  forwardKinematics(model, data, q_full);
  const Point& p = model.points[point];
  return model.stage_pose * pointPosition(data, p.frame, p.position_m);
}

void pointsInStage(const Model& model, DynamicsData& data, const Eigen::VectorXd& q_full,
                   std::vector<Eigen::Vector3d>& out) {
  forwardKinematics(model, data, q_full);
  out.clear();
  for (const Point& p : model.points)
    out.push_back(model.stage_pose * pointPosition(data, p.frame, p.position_m));
}

}  // namespace marionette
