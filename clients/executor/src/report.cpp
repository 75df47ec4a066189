// SPDX-License-Identifier: BSD-3-Clause
#include <algorithm>
#include <cmath>
#include <sstream>

#include "marionette/common/json_text.hpp"
#include "marionette/executor/tracking_report.hpp"
#include "marionette/models/dynamics.hpp"

namespace marionette::executor {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

namespace {

// Stage positions of every named point of `model` at q_d (rig at rho): 3 per point.
Eigen::VectorXd pointsAt(const Model& model, DynamicsData& d, const Eigen::VectorXd& q,
                         const Eigen::VectorXd& rho) {
  forwardKinematics(model, d, model.configuration(q, rho));
  Eigen::VectorXd out(3 * model.points.size());
  for (std::size_t i = 0; i < model.points.size(); ++i)
    out.segment<3>(3 * static_cast<Eigen::Index>(i)) =
        model.stage_pose *
        pointPosition(d, model.points[i].frame, model.points[i].position_m);
  return out;
}

}  // namespace

TrackingReport buildTrackingReport(const Playback& perf, const Stream& stream,
                                   const ExecuteReport& run, const RigDriver& rig,
                                   const ClosedLoop* loop, const std::string& feedback,
                                   const std::string& estimator) {
  TrackingReport r;
  r.feedback = feedback;
  r.estimator = estimator;
  r.stop = toString(run.reason);
  r.exit_status = exitStatus(run.reason);
  r.misses = run.missed_ticks;
  const Model& model = *perf.model;
  if (loop) {
    const ClosedLoopStats& s = loop->stats();
    r.correction_max = s.max_correction;
    r.clamped = s.clamped;
    r.cycle_p50_ms = percentile(s.cycle_ms, 0.5);
    r.cycle_p99_ms = percentile(s.cycle_ms, 0.99);
    r.measurements = s.measurements;
    r.fused = s.fused;
    r.late = s.late;
    r.corrupt = s.corrupt;
    r.ahead = s.ahead;
    r.repeated = s.repeated;
    if (const PredictiveStats* p = loop->predictiveStats()) {
      TrackingReport::Solves v;
      v.started = p->started;
      v.used = p->used;
      v.late = p->late;
      v.skipped = p->skipped;
      v.failed = p->failed;
      v.kept_warm = p->kept_warm;
      v.shortened = p->shortened;
      double iterations = 0.0;
      for (int n : p->iterations) iterations += n;
      if (!p->iterations.empty()) v.iterations_per_solve = iterations / p->iterations.size();
      if (!s.cycle_ms.empty()) v.iterations_per_tick = iterations / s.cycle_ms.size();
      v.p50_ms = percentile(p->solve_ms, 0.5);
      v.p99_ms = percentile(p->solve_ms, 0.99);
      r.solves = v;
    }
  }
  // The puppet's motion over every pass of the play (Stream::playFrame): the sim's truth, else
  // the estimate.
  const auto* sim = dynamic_cast<const SimRig*>(&rig);
  if (perf.predicted_q.rows() == 0 || stream.rate_hz != perf.rate_hz) return r;
  r.motion_from = sim ? "truth" : (loop ? "estimate" : "");
  if (!sim && !loop) return r;
  const Model& truth = sim ? sim->truthModel() : model;
  DynamicsData dm(model), dt(truth);
  const std::size_t np = model.points.size();
  const int per_pass = std::min<int>(static_cast<int>(perf.predicted_q.rows()), stream.play_rows);
  // Sums of squares, largest and last distance per point, over a span of samples.
  struct Span {
    std::vector<double> sum2, worst, last;
    double joint2 = 0.0;
    long joint_n = 0;
    int n = 0;
    explicit Span(std::size_t points) : sum2(points, 0.0), worst(points, 0.0), last(points, NAN) {}
    void fill(const Model& m, std::vector<TrackingReport::PointError>& points,
              double& joints_rms) const {
      for (std::size_t p = 0; p < sum2.size(); ++p)
        points.push_back({m.points[p].name, std::sqrt(sum2[p] / n), worst[p], last[p]});
      joints_rms = std::sqrt(joint2 / static_cast<double>(joint_n));
    }
  };
  Span all(np);
  double est_joint2 = 0.0, est_point2 = 0.0;
  long est_n = 0, est_pn = 0;
  for (long pass = 0; stream.playFrame(pass, 0) < run.frames_sent; ++pass) {
    Span span(np);
    const int played =
        static_cast<int>(std::min<long>(per_pass, run.frames_sent - stream.playFrame(pass, 0)));
    for (int i = 0; i < played; ++i) {
      // The rig tick of the sample: where its frame landed (sim), else the frame's index.
      const long frame = stream.playFrame(pass, i);
      const long t = sim ? sim->frameTicks()[static_cast<std::size_t>(frame)] : frame;
      // The estimates count ticks from the run's first frame (the rig's clock may have started
      // before it, for a calibration).
      const long run_tick = sim ? t - sim->frameTicks().front() : t;
      Eigen::VectorXd estimate;
      if (loop && run_tick >= 0 && run_tick < static_cast<long>(loop->estimates().size()))
        estimate = loop->estimates()[static_cast<std::size_t>(run_tick)];
      const Eigen::VectorXd motion = sim ? sim->measuredQ()[static_cast<std::size_t>(t)] : estimate;
      if (!sim) estimate.resize(0);
      if (motion.size() != model.nd() || !motion.allFinite()) continue;
      const Eigen::VectorXd rho = stream.rows.row(stream.play_begin + i).transpose();
      const Eigen::VectorXd q_plan = perf.predicted_q.row(i).transpose();
      const Eigen::VectorXd planned = pointsAt(model, dm, q_plan, rho);
      // The rig's inputs as sent may differ from the plan's (corrections): the points' positions
      // are the puppet's, at the rig it had; the plan's at the plan's.
      const Eigen::VectorXd actual = pointsAt(truth, dt, motion, rho);
      for (Span* s : {&span, &all}) {
        for (std::size_t p = 0; p < np; ++p) {
          const double d = (actual.segment<3>(3 * p) - planned.segment<3>(3 * p)).norm();
          s->sum2[p] += d * d;
          s->worst[p] = std::max(s->worst[p], d);
          s->last[p] = d;
        }
        s->joint2 += (motion - q_plan).squaredNorm();
        s->joint_n += model.nd();
        ++s->n;
      }
      if (estimate.size() == model.nd() && estimate.allFinite()) {
        est_joint2 += (estimate - motion).squaredNorm();
        est_n += model.nd();
        const Eigen::VectorXd est_points = pointsAt(model, dm, estimate, rho);
        est_point2 += (est_points - actual).squaredNorm();
        est_pn += static_cast<long>(np);
      }
    }
    if (span.n == 0) continue;
    TrackingReport::Pass out;
    out.samples = span.n;
    span.fill(model, out.points, out.joints_rms);
    r.passes.push_back(std::move(out));
  }
  r.samples = all.n;
  if (all.n == 0) return r;
  all.fill(model, r.points, r.joints_rms);
  if (est_n > 0) r.estimation_rms_joints = std::sqrt(est_joint2 / static_cast<double>(est_n));
  if (est_pn > 0) r.estimation_rms_points_m = std::sqrt(est_point2 / static_cast<double>(est_pn));
  return r;
}

std::string toJson(const TrackingReport& r) {
  std::ostringstream os;
  os.precision(6);
  os << "{\n  ";
  JsonMembers m(os, ",\n  ");
  m.text("format", "marionette-tracking-report");
  m.key("version") << 1;
  m.text("feedback", r.feedback);
  auto text_or_null = [&m](const char* name, const std::string& v) {
    if (v.empty())
      m.key(name) << "null";
    else
      m.text(name, v);
  };
  text_or_null("estimator", r.estimator);
  text_or_null("motion_from", r.motion_from);
  m.text("stop", r.stop);
  m.key("exit_status") << r.exit_status;
  m.key("samples") << r.samples;
  // A point a line, indented by `indent`.
  auto points = [&os](JsonMembers& into, const std::vector<TrackingReport::PointError>& list,
                      const std::string& indent) {
    into.key("points") << (list.empty() ? "{" : "{\n" + indent + "  ");
    JsonMembers each(os, ",\n" + indent + "  ");
    for (const auto& p : list) {
      each.key(p.name) << '{';
      JsonMembers values(os, ", ");
      values.numbers({{"rms_m", p.rms_m}, {"max_m", p.max_m}, {"at_goal_m", p.at_goal_m}});
      os << '}';
    }
    os << (list.empty() ? "}" : "\n" + indent + "}");
  };
  points(m, r.points, "  ");
  m.number("joints_rms_rad", r.joints_rms);
  m.key("passes") << (r.passes.empty() ? "[" : "[\n    ");
  for (std::size_t k = 0; k < r.passes.size(); ++k) {
    if (k > 0) os << ",\n    ";
    os << "{\n      ";
    JsonMembers pass(os, ",\n      ");
    pass.key("samples") << r.passes[k].samples;
    pass.number("joints_rms_rad", r.passes[k].joints_rms);
    points(pass, r.passes[k].points, "      ");
    os << "\n    }";
  }
  os << (r.passes.empty() ? "]" : "\n  ]");
  auto object = [&m, &os](const char* name, auto fill) {
    m.key(name) << '{';
    JsonMembers inner(os, ", ");
    fill(inner);
    os << '}';
  };
  object("estimation_rms", [&](JsonMembers& e) {
    e.numbers({{"joints_rad", r.estimation_rms_joints}, {"points_m", r.estimation_rms_points_m}});
  });
  object("corrections", [&](JsonMembers& c) {
    c.number("max", r.correction_max);
    c.key("clamped") << r.clamped;
  });
  object("cycle_ms", [&](JsonMembers& c) {
    c.numbers({{"p50", r.cycle_p50_ms}, {"p99", r.cycle_p99_ms}});
  });
  m.key("misses") << r.misses;
  object("measurements", [&](JsonMembers& c) {
    c.counts({{"received", r.measurements}, {"fused", r.fused}, {"late", r.late},
              {"corrupt", r.corrupt}, {"ahead", r.ahead}, {"repeated", r.repeated}});
  });
  if (r.solves) {
    object("solves", [&](JsonMembers& c) {
      c.counts({{"started", r.solves->started},
                {"used", r.solves->used},
                {"late", r.solves->late},
                {"skipped", r.solves->skipped},
                {"failed", r.solves->failed},
                {"kept_warm", r.solves->kept_warm},
                {"shortened", r.solves->shortened}});
      c.numbers({{"iterations_per_solve", r.solves->iterations_per_solve},
                 {"iterations_per_tick", r.solves->iterations_per_tick},
                 {"p50_ms", r.solves->p50_ms},
                 {"p99_ms", r.solves->p99_ms}});
    });
  }
  if (r.calibration) {
    m.key("calibration");
    writeCalibrationJson(os, *r.calibration, "  ");
  }
  os << "\n}\n";
  return os.str();
}

}  // namespace marionette::executor
