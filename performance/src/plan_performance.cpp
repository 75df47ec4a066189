// SPDX-License-Identifier: BSD-3-Clause
// planPerformance: targets -> kinematic step -> limits -> dynamics step -> verified plan
// (performance.hpp).
#include "marionette/performance/plan_performance.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/verification.hpp"
#include "marionette/trajopt/horizon_tracking.hpp"
#include "marionette/trajopt/rig_motion_fit.hpp"
#include "calm_reference.hpp"
#include "near_misses.hpp"
#include "performance_kinematics.hpp"
#include "performance_tracking.hpp"
#include "reach_fit.hpp"
#include "settle_tail.hpp"

namespace marionette {

namespace {

// The rest poses the key frames' probes of the inputs may solve where a target's motion was
// being lost (KinematicSetup::probe_rest_poses): PuppetCopter's keyframed hop takes 200-250.
constexpr int kProbeRestPoses = 300;

// Rows of `keys` (at key times) interpolated linearly at `n` samples of rate_hz.
Eigen::MatrixXd upsample(const std::vector<double>& key_times, const Eigen::MatrixXd& keys,
                         int n, double rate_hz) {
  Eigen::MatrixXd out(n, keys.cols());
  for (int s = 0; s < n; ++s) {
    const double t = s / rate_hz;
    const auto it = std::upper_bound(key_times.begin(), key_times.end(), t);
    if (it == key_times.begin()) {
      out.row(s) = keys.row(0);
    } else if (it == key_times.end()) {
      out.row(s) = keys.row(keys.rows() - 1);
    } else {
      const int i = static_cast<int>(it - key_times.begin()) - 1;
      const double w = (t - key_times[i]) / (key_times[i + 1] - key_times[i]);
      out.row(s) = (1 - w) * keys.row(i) + w * keys.row(i + 1);
    }
  }
  return out;
}

// Exact for a performance: collision-free, within every limit, clear of the stage by the
// margin.  (Its goal, the rest pose at its last inputs, is measured but not required: a
// performance is judged by its tracking, which the plan reports.)
void classifyPerformance(const GoalSpec& goal, Plan& plan) {
  const int goal_sample = plan.goal_sample;
  plan.goal_sample = std::max(goal_sample, 0);
  classifyPlan(goal, plan);
  plan.goal_sample = goal_sample;
}

}  // namespace

StageThresholds performanceStageThresholds(const PerformanceOptions& options) {
  StageThresholds out;
  out.min_stage_clearance_m = std::min(out.min_stage_clearance_m, options.margin_m);
  return out;
}

Plan planPerformance(const PerformanceRequest& req, const ProgressFn& progress,
                     const CancelFn& cancelled) {
  const auto t0 = SteadyClock::now();
  const CancelScope scope(cancelled);  // reaches every rest pose, fit and re-simulation below
  if (!req.model) throw FieldError("model", "none given");
  const ModelPtr& model = req.model;
  const Model& m = *model;
  const PerformanceOptions& o = req.options;
  checkPerformanceOptions(m, o);
  const TargetMotion& targets = req.targets;
  checkPerformanceTargets(m, targets, o);
  CollisionModelPtr collision = req.collision;
  if (!collision)
    collision = std::make_shared<CollisionModel>(model, req.scene ? req.scene : loadScene("empty"),
                                                 problemCollisionOptions());
  auto stopIfCancelled = [&] { throwIfCancelled("performance"); };
  auto report = [&](const char* phase, int iteration, double cost) {
    if (!progress) return;
    PlanProgress e;
    e.phase = phase;
    e.elapsed_s = secondsSince(t0);
    e.iteration = iteration;
    e.cost = cost;
    progress(e);
  };

  // Targets at the output rate (the plan's, stage coordinates) and at the key rate (the
  // kinematic step's, the model's world frame).
  const Eigen::Isometry3d to_world = m.stage_pose.inverse();
  auto inWorld = [&](TargetMotion t) {
    for (Eigen::Index r = 0; r < t.positions_m.rows(); ++r)
      for (Eigen::Index c = 0; c + 2 < t.positions_m.cols(); c += 3) {
        const Eigen::Vector3d p = t.positions_m.block<1, 3>(r, c).transpose();
        if (p.allFinite()) t.positions_m.block<1, 3>(r, c) = (to_world * p).transpose();
      }
    return t;
  };
  const TargetMotion sampled = sampleTargets(targets, o.rate_hz);
  const TargetMotion keys_stage = sampleTargets(targets, o.key_rate_hz);
  const TargetMotion keys = inWorld(keys_stage);

  // 1. The kinematic step at the key frames: its iterations counted (solveKeyFrames); a deadline
  // the caller set stops it, and the plan says so.
  detail::KinematicSetup ks;
  ks.model = model;
  ks.collision = collision;
  ks.margin_m = o.margin_m;
  ks.disable = o.disable;
  ks.start_inputs = m.defaultInputs();
  // The whole puppet in both steps' objectives (calm_reference.hpp).
  const std::vector<int> calm =
      o.calm_weight > 0 ? detail::calmPoints(m, targets.points, targets.variables, o.free_points)
                        : std::vector<int>{};
  ks.calm_points = calm;
  ks.calm_weight = o.calm_weight;
  const bool has_deadline = o.time_limit_s > 0;
  const auto in_time = [&] {
    return (!has_deadline || secondsSince(t0) < o.time_limit_s) && !(cancelled && cancelled());
  };
  const std::string deadline = "the deadline (" + formatNumber(o.time_limit_s) + " s, as set)";
  ks.in_time = in_time;
  std::vector<detail::KinematicFrame> frames = detail::solveKeyFrames(ks, keys);
  stopIfCancelled();
  std::vector<std::string>
      notes;  // for the plan's message: what the deadline stopped, a step not kept
  auto cutShort = [&](const char* what) {
    for (std::size_t f = 0; f < frames.size(); ++f)
      if (frames[f].cut_short) {
        notes.push_back(deadline + " stopped " + what +
                        " at key frame " + std::to_string(f + 1) + " of " +
                        std::to_string(frames.size()) + " (" + formatNumber(keys.times_s[f], 3) +
                        " s): later frames are not refined");
        return true;
      }
    return false;
  };
  bool kinematic_cut = cutShort("the kinematic step");
  if (kinematic_cut && o.retarget) notes.back() += " and the targets not retargeted into reach";

  // ... the targets fitted into reach: to where the key frames hold their points (stage
  // coordinates).  What the dynamics step follows and the plan is measured against.
  const int n_points = static_cast<int>(targets.points.size());
  auto heldPoints = [&](const std::vector<detail::KinematicFrame>& solved) {
    Eigen::MatrixXd held(static_cast<Eigen::Index>(solved.size()), 3 * n_points);
    DynamicsData data(m);
    for (std::size_t f = 0; f < solved.size(); ++f) {
      forwardKinematics(m, data, m.configuration(solved[f].q, solved[f].rho));
      for (int p = 0; p < n_points; ++p) {
        const Point& point = m.points[m.pointIndex(targets.points[p])];
        held.block<1, 3>(static_cast<Eigen::Index>(f), 3 * p) =
            (m.stage_pose * pointPosition(data, point.frame, point.position_m)).transpose();
      }
    }
    return held;
  };
  Eigen::MatrixXd held_m = heldPoints(frames);
  std::vector<detail::ReachFit> fits =
      o.retarget && !kinematic_cut ? detail::fitIntoReach(keys_stage, held_m, o.tolerance_m)
                                   : std::vector<detail::ReachFit>(n_points);
  // Before a motion is shrunk below half (a lost motion): whether the puppet makes more of it
  // with its untargeted limbs moved too (marionette25's hands raised 10 cm by hoisting the whole
  // puppet).  The key frames solved again without the calm points, kept when their fit loses no
  // motion.
  auto leastKept = [](const std::vector<detail::ReachFit>& fitted_into_reach) {
    double least = 1.0;
    for (const detail::ReachFit& f : fitted_into_reach) least = std::min(least, f.kept);
    return least;
  };
  // Then whether the frames' descent stalled on a flat stretch short of a motion the puppet can
  // make (PuppetCopter's keyframed hop: its head kept at 5 % of its 6 cm lift, since shortening
  // the head's string lifts nothing until the shoulder strings go slack): the key frames solved
  // again with probes of the inputs, the calm points held.
  auto tryAgain = [&](const detail::KinematicSetup& again, const char* note) {
    std::vector<detail::KinematicFrame> moved = detail::solveKeyFrames(again, keys);
    stopIfCancelled();
    const bool moved_cut = std::any_of(moved.begin(), moved.end(),
                                       [](const detail::KinematicFrame& f) { return f.cut_short; });
    const Eigen::MatrixXd moved_m = heldPoints(moved);
    std::vector<detail::ReachFit> moved_fits =
        detail::fitIntoReach(keys_stage, moved_m, o.tolerance_m);
    // (A budget that ran out is said, whether the try is kept or not.)
    const auto ran_out = std::find_if(moved.begin(), moved.end(),
                                      [](const detail::KinematicFrame& f) {
                                        return f.probes_ran_out;
                                      });
    const std::string budget =
        ran_out == moved.end()
            ? ""
            : "the probes of the inputs used their budget (" +
                  std::to_string(again.probe_rest_poses) + " rest poses) at key frame " +
                  std::to_string(ran_out - moved.begin() + 1) + " of " +
                  std::to_string(moved.size());
    if (moved_cut || leastKept(moved_fits) < 0.5) {
      if (!budget.empty()) notes.push_back(budget + ", and kept less than half of a motion");
      return false;
    }
    frames = std::move(moved);
    held_m = moved_m;
    fits = std::move(moved_fits);
    ks = again;  // (its refinement below, too)
    notes.push_back(budget.empty() ? std::string(note) : note + ("; " + budget));
    return true;
  };
  if (o.retarget && !kinematic_cut && leastKept(fits) < 0.5) {
    detail::KinematicSetup unheld = ks;
    unheld.calm_points.clear();
    detail::KinematicSetup probed = ks;
    probed.probe_rest_poses = kProbeRestPoses;
    const bool let_move =
        !calm.empty() && tryAgain(unheld, "the untargeted points were let move where holding "
                                          "them lost a target's motion");
    if (!let_move)
      tryAgain(probed, "the key frames were solved again with probes of the inputs where a "
                       "target's motion was being lost");
  }
  const TargetMotion fitted = detail::applyReachFit(sampled, fits);
  const TargetMotion fitted_keys = detail::applyReachFit(keys_stage, fits);
  // The key frames whose points are held off their fitted targets, solved again for them from
  // where they are (the fit moved the targets toward what they hold).  (Only those whose targets
  // the fit moved by more than the tolerance, tried: PuppetCopter's walk then tracked worse,
  // hands 3.4-6.1 cm rms against 2.1-4.6, and its end did not settle.)
  std::vector<char> refine(frames.size(), 0);
  for (std::size_t f = 0; f < frames.size(); ++f)
    for (int p = 0; p < n_points; ++p) {
      const int k = static_cast<int>(f);
      const Eigen::Vector3d target = fitted_keys.position(k, p);
      refine[f] |= fits[p].fitted && target.allFinite() &&
                   (held_m.block<1, 3>(k, 3 * p).transpose() - target).norm() > o.tolerance_m;
    }
  if (std::find(refine.begin(), refine.end(), 1) != refine.end()) {
    frames = detail::refineKeyFrames(ks, inWorld(fitted_keys), frames, refine);
    stopIfCancelled();
    kinematic_cut = cutShort("the kinematic step's refinement on the fitted targets");
    held_m = heldPoints(frames);
  }
  report("kinematic", 0, 0.0);
  Eigen::MatrixXd key_inputs(static_cast<Eigen::Index>(frames.size()), m.nk());
  for (std::size_t f = 0; f < frames.size(); ++f)
    key_inputs.row(static_cast<Eigen::Index>(f)) = frames[f].rho.transpose();

  // ... time-parameterized within the limits: the spline nearest to them.
  const Eigen::VectorXd rho0 = frames.front().rho;
  const int samples = sampled.frames();
  const double duration_s = (samples - 1) / o.rate_hz;
  const int segments = std::max(3, static_cast<int>(std::lround(duration_s * o.knots_per_s)));
  const Eigen::MatrixXd wanted = upsample(keys.times_s, key_inputs, samples, o.rate_hz);
  const RigMotionFit fit = fitRigMotion(m, rho0, wanted, o.rate_hz, segments, 0.97);
  const Eigen::MatrixXd& u_free = fit.unconstrained;

  MotionProblem request;
  request.model = model;
  request.scene = req.scene;
  request.collision = collision;
  request.start_inputs = rho0;
  request.goal.kind = GoalSpec::Kind::RestOf;
  // The disabled inputs' columns exactly at their start (a spline's samples of a constant are it
  // to rounding).
  Eigen::MatrixXd u_kinematic = fit.inputs;
  for (int j : o.disable) u_kinematic.col(j).setConstant(rho0[j]);
  for (int j = 0; j < m.nk(); ++j)
    request.goal.values.emplace_back(m.kinematic[j].name, u_kinematic(u_kinematic.rows() - 1, j));
  request.goal.at_rest = true;
  // Its rest pose from the last key frame's, standing on what that one stands on.
  request.goal.rest_guess_q = frames.back().q;
  request.goal.rest_contacts = collision->contacts();

  auto planOf = [&](const Eigen::MatrixXd& inputs, const char* planner) {
    Plan plan = planHeader(request, *collision, o.rate_hz);
    plan.goal = "performance of " + targets.source;
    plan.stats.planner = planner;
    plan.inputs = inputs;
    plan.clearance_margin_m = o.margin_m;
    try {
      verifyPlan(request, collision, plan);
      classifyPerformance(request.goal, plan);
    } catch (const FieldError& e) {
      // The end's rest-of goal is the performance's own, not a request's field (no --goal).
      if (e.argument() != "goal") throw;
      throw std::runtime_error("the performance's end: no rest pose at its last inputs: " +
                               e.problem());
    }
    plan.performance.targets = fitted;
    return plan;
  };
  Plan kinematic = planOf(u_kinematic, "performance (kinematic step)");
  kinematic.performance.tracking.kinematic = measureTracking(
      fitted, kinematic.predicted.point_names, kinematic.predicted.points_m, o.rate_hz);
  Plan out = kinematic;
  stopIfCancelled();

  // The receding horizon's setup the dynamics step and the end's settling share.
  auto windows = [&] {
    HorizonTracking s;
    s.model = model;
    s.collision = collision;
    s.rate_hz = o.rate_hz;
    for (int j = 0; j < m.nk(); ++j)
      s.input_scale_m.push_back(detail::variableScale_m(m, m.nd() + j));
    s.held_inputs = o.disable;
    s.weights = o.weights;
    s.margin_m = o.margin_m > 0 ? o.margin_m + std::max(0.005, 0.5 * o.margin_m) : 0.0;
    s.in_time = in_time;
    return s;
  };

  // 2. The dynamics step from the kinematic step's motion (none when the time limit is spent):
  // the targets followed over a receding horizon on the transcription, the kinematic step's
  // inputs the warm start and what untargeted limbs are held near (horizon_tracking.hpp).
  if (o.dynamics && kinematic_cut)
    notes.push_back("the dynamics step did not run: the kinematic step used the time limit");
  if (o.dynamics && !kinematic_cut) {
    IntegratorOptions io;
    io.dt_s = 1.0 / o.rate_hz;
    VariationalIntegrator vi(model, io);
    const StartState start = resolveStart(model, rho0, StartSpec{}, collision->contacts());
    HorizonTracking setup = windows();
    setup.start = vi.stateFromVelocity(start.q, start.qdot, rho0);
    setup.reference_inputs = u_kinematic;
    for (const std::string& name : fitted.points) setup.track_points.push_back(m.pointIndex(name));
    setup.track_targets_m = inWorld(fitted).positions_m;
    // The calm points held near where the kinematic step's rest poses put them.
    if (!calm.empty())
      detail::holdCalm(setup, calm, o.calm_weight,
                       detail::restPointMotion(model, u_kinematic, calm, start.q,
                                               collision->contacts()));
    setup.track_values = sampled.values;
    for (const std::string& name : sampled.variables) {
      setup.track_variables.push_back(m.variableIndex(name));
      setup.track_variable_scale_m.push_back(detail::variableScale_m(m, m.variableIndex(name)));
    }
    setup.progress = [&](int window, int, double cost) { report("optimize", window, cost); };
    HorizonTrackingResult horizon;
    std::string dropped;
    try {
      horizon = trackOverHorizon(setup);
    } catch (const SimulationError& e) {
      dropped = std::string("its windows could not be re-simulated: ") + e.what();
    }
    stopIfCancelled();
    const auto judge = [&](const Eigen::MatrixXd& inputs) {
      Plan plan = planOf(inputs, "performance (dynamics step)");
      measurePlanQuality(request, *collision, plan, o.settle_s);
      detail::JudgedPass j;
      j.errors_m =
          detail::trackingErrors(fitted, plan.predicted.point_names, plan.predicted.points_m);
      j.off = detail::samplesOff(j.errors_m, o.tolerance_m);
      j.snaps = plan.quality.snaps;
      j.peak_tension_ratio = plan.quality.peak_tension_ratio;
      j.exact = plan.outcome == PlanOutcome::Exact;
      return j;
    };
    // The motion as kept, re-simulated and measured once for the tries below.
    std::optional<detail::JudgedPass> judged;
    if (dropped.empty() && horizon.stopped_at < 0) {
      try {
        judged = judge(horizon.inputs);
      } catch (const SimulationError&) {
        // (a motion that cannot be re-simulated is not tried again; it is judged below)
      }
    }
    // A motion whose strings pull over 3 times their static load (the windows let a string pull
    // as hard as their warm start does): the windows solved again with every string within 2.5
    // times its static load, and if it still pulls over 3 times, within 2.5 times its own load at
    // either end (as the peak is judged); each kept when it snaps no more, pulls less, and is
    // exact if the motion before it was.
    using Bound = HorizonTracking::TensionBound;
    for (const Bound bound : {Bound::StaticLoad, Bound::OwnLoad}) {
      if (!judged || judged->peak_tension_ratio <= 3.0) break;
      try {
        HorizonTracking bounded = setup;
        bounded.tension_bound = bound;
        HorizonTrackingResult again = trackOverHorizon(bounded);
        stopIfCancelled();
        if (again.stopped_at >= 0) break;
        detail::JudgedPass second = judge(again.inputs);
        if (second.snaps <= judged->snaps &&
            second.peak_tension_ratio < judged->peak_tension_ratio &&
            (second.exact || !judged->exact)) {
          notes.push_back(formatted(
              bound == Bound::StaticLoad
                  ? "the dynamics step's windows solved again with every string within 2.5 "
                    "times its static load (peak x%.3g, x%.3g before)"
                  : "the dynamics step's windows solved again with every string within 2.5 "
                    "times its own load at either end (peak x%.3g, x%.3g before)",
              second.peak_tension_ratio, judged->peak_tension_ratio));
          horizon = std::move(again);
          setup.tension_bound = bound;
          judged = std::move(second);
        }
      } catch (const SimulationError&) {
        // (a motion that cannot be re-simulated is not kept; the one before stands)
      }
    }
    // Targets missed by a little, weighed more where missed (near_misses.hpp).
    const int reweighted =
        judged ? detail::solveNearMissesAgain(setup, n_points, o.tolerance_m, judge,
                                              stopIfCancelled, *judged, horizon)
               : 0;
    if (reweighted > 0)
      notes.push_back(formatted("the dynamics step's windows solved again with the samples "
                                "near its misses weighed more (pass %d of %d kept)",
                                reweighted, detail::kNearMissPasses));
    if (horizon.kept_warm + horizon.solve_failed > 0)
      notes.push_back(formatted(
          "the dynamics step kept its warm start in %d of %d windows (the solver's inputs, "
          "re-simulated, cost more%s)",
          horizon.kept_warm + horizon.solve_failed, horizon.windows,
          horizon.solve_failed > 0 ? ", or it ended without a motion" : ""));
    if (horizon.stopped_at >= 0)
      notes.push_back(
          deadline + " stopped the dynamics step at " +
          formatNumber(horizon.stopped_at / o.rate_hz, 3) + " s (window " +
          std::to_string(horizon.windows + 1) + " of " + std::to_string(horizon.windows_planned) +
          "): the kinematic step's inputs from there, within the rig's limits");
    // It replaces the kinematic step's unless it broke what that one kept; else why is said.
    if (dropped.empty()) {
      try {
        // Named by what made its motion (the notes say why): the kinematic step where every
        // window solved kept it, the dynamics step up to where a deadline stopped its windows.
        const std::string step =
            horizon.kept_warm + horizon.solve_failed == horizon.windows
                ? "performance (kinematic step)"
            : horizon.stopped_at >= 0
                ? "performance (dynamics step to " +
                      formatNumber(horizon.stopped_at / o.rate_hz, 3) +
                      " s, the kinematic step's after)"
                : "performance (dynamics step)";
        Plan dynamic = planOf(horizon.inputs, step.c_str());
        dynamic.performance.tracking.kinematic = kinematic.performance.tracking.kinematic;
        dynamic.performance.tracking.dynamic = measureTracking(
            fitted, dynamic.predicted.point_names, dynamic.predicted.points_m, o.rate_hz);
        const double rms_dynamic_m = detail::rmsTotal(dynamic.performance.tracking.dynamic),
                     rms_kinematic_m = detail::rmsTotal(kinematic.performance.tracking.kinematic);
        // Both within the tolerance throughout: the one that leaves less swing after the end.
        auto within = [&](const std::vector<PointTracking>& tracking) {
          for (const PointTracking& t : tracking)
            if (t.max_m > o.tolerance_m) return false;
          return true;
        };
        const bool both_followed = within(dynamic.performance.tracking.dynamic) &&
                                   within(kinematic.performance.tracking.kinematic);
        if (both_followed) {
          measurePlanQuality(request, *collision, kinematic, o.settle_s);
          measurePlanQuality(request, *collision, dynamic, o.settle_s);
        }
        // (Stage-worthy: as a plan is; the one verdict below judges the kept motion so.)
        std::vector<std::string> unstaged;
        if (both_followed &&
            stageShortfalls(kinematic, performanceStageThresholds(o)).empty())
          unstaged = stageShortfalls(dynamic, performanceStageThresholds(o));
        if (kinematic.outcome == PlanOutcome::Exact && dynamic.outcome != PlanOutcome::Exact)
          dropped = "its motion is " + std::string(toString(dynamic.outcome)) + " (" +
                    dynamic.message + ")";
        else if (!unstaged.empty())
          dropped = "both follow every target within the tolerance, and it is not stage-worthy (" +
                    unstaged.front() + ") where the kinematic step's is";
        else if (both_followed && dynamic.quality.residual_joint_speed_rms >
                                      kinematic.quality.residual_joint_speed_rms)
          dropped = formatted(
              "both follow every target within the tolerance, and it leaves %.3g rad/s after "
              "the end, the kinematic step's %.3g",
              dynamic.quality.residual_joint_speed_rms,
              kinematic.quality.residual_joint_speed_rms);
        else if (!both_followed && rms_dynamic_m > rms_kinematic_m)
          dropped = formatted("its targets' rms %.3g m is over the kinematic step's %.3g m",
                              rms_dynamic_m, rms_kinematic_m);
        else
          dropped.clear();
        if (dropped.empty()) out = std::move(dynamic);
      } catch (const SimulationError& e) {
        dropped = std::string("its motion's re-simulation failed: ") + e.what();
      }
    }
    if (!dropped.empty()) notes.push_back("the dynamics step's motion was not kept: " + dropped);
  }

  // 3. The end settles where holding the last inputs leaves the puppet moving (settle_tail.hpp,
  // settleEnd); a deadline the caller set is its deadline too, and nothing is tried once it has
  // passed.
  constexpr double kSettled_rad_s = 0.1;  // joint speed rms after the hold: stage-worthy
  measurePlanQuality(request, *collision, out, o.settle_s);
  const bool swinging = o.settle_s > 0 && out.outcome == PlanOutcome::Exact && !kinematic_cut &&
                        out.quality.residual_joint_speed_rms > kSettled_rad_s;
  const double left_s = has_deadline ? o.time_limit_s - secondsSince(t0) : 0.0;
  if (swinging && has_deadline && left_s <= 0) {
    notes.push_back("the end was not settled: " + deadline + " had passed");
  } else if (swinging) {
    detail::EndSettling end;
    end.request = &request;
    end.collision = collision.get();
    end.settle_s = o.settle_s;
    end.margin_m = o.margin_m;
    end.disabled = o.disable;
    end.start_inputs = rho0;
    end.plan_of = [&planOf, planner = out.stats.planner](const Eigen::MatrixXd& inputs) {
      return planOf(inputs, planner.c_str());
    };
    end.windows = windows();
    end.time_left_s = left_s;
    end.in_time = in_time;
    end.deadline = deadline;
    notes.push_back(detail::settleEnd(end, out));
  }

  // Targets the puppet does not follow, and why.
  const double hold_tol = 1e-3;
  std::vector<std::vector<int>> own_inputs;  // per target point: its limb's (Model::pointInputs)
  for (const std::string& name : fitted.points)
    own_inputs.push_back(m.pointInputs(m.pointIndex(name)));
  TargetTracking& tracking = out.performance.tracking;
  tracking.unreachable = detail::spansOff(
      out.predicted.point_names, out.predicted.points_m, o.rate_hz, fitted, o.tolerance_m,
      [&](int p, int s) {
        const double t = s / o.rate_hz;
        const int f = std::min(static_cast<int>(std::lround(t * o.key_rate_hz)),
                               static_cast<int>(frames.size()) - 1);
        const detail::KinematicFrame& key = frames[f];
        const Eigen::Vector3d held = held_m.block<1, 3>(f, 3 * p).transpose();
        if ((held - fitted_keys.position(f, p)).norm() > o.tolerance_m)
          return key.stage_clearance_m < 1.5 * o.margin_m + 0.005
                     ? "out of reach clear of the stage (nearest: " + key.nearest + ")"
                     : std::string("out of the puppet's reach at rest");
        for (int j : own_inputs[p]) {
          const double range = m.kinematic[j].upper - m.kinematic[j].lower;
          const int row = std::min(s, static_cast<int>(u_free.rows()) - 1);
          if (std::abs(u_free(row, j) - u_kinematic(row, j)) > hold_tol * range + 0.01 * range)
            return "faster than the rig (" + m.kinematic[j].name +
                   " at its speed or acceleration limit)";
        }
        return std::string("the puppet swings off it");
      });
  // ... the keyframes' joint and input targets ...
  tracking.variables = detail::variableTracking(m, out, sampled);
  // ... how far the points without a target stray ...
  tracking.untargeted = detail::untargetedExcursions(out, fitted.points);
  // ... and how far retargeting moved them from the clip.
  auto fitOf = [&](int p) {  // in words, about where the clip's mean went
    Eigen::Vector3d mean = Eigen::Vector3d::Zero();
    int n = 0;
    for (int s = 0; s < sampled.frames(); ++s)
      if (sampled.position(s, p).allFinite()) mean += sampled.position(s, p), ++n;
    return fits[p].describe(mean / std::max(n, 1));
  };
  if (o.retarget && !kinematic_cut) {
    tracking.retarget = measureTracking(sampled, fitted.points, fitted.positions_m, o.rate_hz);
    tracking.retarget_spans =
        detail::spansOff(fitted.points, fitted.positions_m, o.rate_hz, sampled, o.tolerance_m,
                         [&](int p, int) { return "out of reach, fitted: " + fitOf(p); });
  }
  // (out's quality was measured before the end's tail, or is the settled plan's.)
  // Exact only when every target is followed within the tolerance over the whole clip (and the
  // motion collision-free and within its limits: classifyPlan) ...
  std::vector<std::string> shortfalls;
  // A motion retargeting shrank below half of its clip's (a clip moving more than the tolerance)
  // is lost, not followed: said first, with the point and the share kept.
  constexpr double kLostMotion = 0.5;
  if (o.retarget && !kinematic_cut)
    for (std::size_t p = 0; p < fits.size(); ++p)
      if (fits[p].fitted && fits[p].clip_motion_m > o.tolerance_m && fits[p].kept < kLostMotion)
        shortfalls.push_back(formatted(
            "%s's motion kept at %.0f %% of its clip's (up to %.3g m; fitted: %s)",
            fitted.points[p].c_str(), 100 * fits[p].kept, fits[p].clip_motion_m,
            fitOf(static_cast<int>(p)).c_str()));
  const std::size_t spans = tracking.unreachable.size();
  if (spans > 0) {
    const UnreachableSpan& u = tracking.unreachable.front();
    shortfalls.push_back(std::to_string(spans) + " span(s) of targets not followed within " +
                         formatNumber(o.tolerance_m) + " m (first: " + u.point + " " +
                         formatNumber(u.from_s, 3) + "-" + formatNumber(u.to_s, 3) + " s, " +
                         u.reason + ")");
  }
  int far = -1, n_far = 0;  // points whose fitted targets are too far from their clip
  for (int p = 0; p < static_cast<int>(tracking.retarget.size()); ++p)
    if (tracking.retarget[p].rms_m > o.reach_tolerance_m) {
      ++n_far;
      if (far < 0 || tracking.retarget[p].rms_m > tracking.retarget[far].rms_m) far = p;
    }
  if (n_far > 0)
    shortfalls.push_back(formatted(
        "%d point(s) fitted into reach farther than %s m rms from their clip (farthest: %s, "
        "%.3g m; %s)",
        n_far, formatNumber(o.reach_tolerance_m).c_str(), tracking.retarget[far].point.c_str(),
        tracking.retarget[far].rms_m, fitOf(far).c_str()));
  // A variable is followed within the tolerance's worth of its unit (a radian weighs 10 cm).
  for (int v = 0; v < static_cast<int>(tracking.variables.size()); ++v) {
    const PointTracking& t = tracking.variables[v];
    const double scale_m = detail::variableScale_m(m, m.variableIndex(t.point));
    const double tolerance = o.tolerance_m / scale_m;
    if (t.max_m > tolerance) {
      shortfalls.push_back(formatted("%s's target not followed within %.3g %s (%.3g at %.2f s)",
                                     t.point.c_str(), tolerance, scale_m == 1.0 ? "m" : "rad",
                                     t.max_m, t.max_at_s));
      break;  // the first; every one is in the plan's tracking
    }
  }
  // ... and stage-worthy as a plan is (no snap, peak tension, clearance, the swing over a 1 s
  // hold after the end), each shortfall named.
  if (out.quality.settle_s != 1.0) measurePlanQuality(request, *collision, out, 1.0);
  bool first_stage_shortfall = true;
  for (const std::string& what : stageShortfalls(out, performanceStageThresholds(o))) {
    if (what == toString(out.outcome)) continue;  // not exact: its message says why
    shortfalls.push_back((first_stage_shortfall ? "not stage-worthy: " : "") + what);
    first_stage_shortfall = false;
  }
  if (out.outcome == PlanOutcome::Exact && (!shortfalls.empty() || kinematic_cut))
    out.outcome = PlanOutcome::Approximate;
  // What made it approximate, the first first; what was cut short or dropped.
  for (const std::string& what : shortfalls)
    out.message += (out.message.empty() ? "" : "; ") + what;
  for (const std::string& what : notes) out.message += (out.message.empty() ? "" : "; ") + what;
  out.stats.total_time_s = secondsSince(t0);
  requireFiniteNumbers(out);
  return out;
}

}  // namespace marionette
