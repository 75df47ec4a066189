// SPDX-License-Identifier: BSD-3-Clause
// Loading what to play, and turning it into the rows the executor sends.

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "marionette/common/text.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/executor/resample.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/input_limits.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "marionette/plan/plan_file.hpp"

namespace marionette::executor {

const char* toString(Phase p) {
  switch (p) {
    case Phase::Ramp: return "ramp";
    case Phase::Settle: return "settle";
    case Phase::Play: return "play";
    case Phase::Return: return "return";
  }
  return "?";
}

namespace {

InputSchedule scheduleFromRows(const Model& model, const Eigen::MatrixXd& rows, double rate_hz) {
  InputSchedule s;
  s.defaults = model.defaultInputs();
  s.values = rows;
  for (Eigen::Index i = 0; i < rows.rows(); ++i) s.times_s.push_back(i / rate_hz);
  return s;
}

}  // namespace

Playback loadPlanFile(const std::string& path, const ModelPtr& model_in) {
  const Plan plan = readPlanFile(path);
  const auto fieldError = [&](const std::string& field, const std::string& what) {
    return std::invalid_argument(path + ": " + field + ": " + what);
  };
  ModelPtr model = model_in;
  if (!model) {
    try {
      model = loadModel(plan.model);
    } catch (const std::exception& e) {
      throw fieldError("model", "'" + plan.model + "': " + e.what() + " (give the model file)");
    }
  } else if (model->name != plan.model) {
    throw fieldError(
        "model", "the plan is for '" + plan.model + "', the model given is '" + model->name + "'");
  }
  if (!plan.collision_free)
    throw fieldError("collision_free",
                     "the plan's verified motion touches the stage or itself; refusing to play it");
  if (!plan.limit_violations.empty())
    throw fieldError("limit_violations", plan.limit_violations[0] + "; refusing to play it");
  std::vector<std::string> expected;
  for (const auto& kv : model->kinematic) expected.push_back(kv.name);
  if (plan.input_names != expected)
    throw fieldError("inputs.names",
                     "the columns are not the kinematic variables of '" + model->name + "'");
  Playback p;
  p.model = model;
  p.source = path;
  p.rate_hz = plan.rate_hz;
  p.inputs = scheduleFromRows(*model, plan.inputs, plan.rate_hz);
  p.duration_s = plan.duration_s();
  p.scene = plan.scene;
  p.gains = plan.gains;
  if (static_cast<int>(plan.predicted.state_names.size()) == model->nd())
    p.predicted_q = plan.predicted.states;
  return p;
}

Playback loadInputsCsv(const std::string& path, const ModelPtr& model, double rate_hz) {
  if (!model) throw FieldError("model", "an inputs CSV needs the model it is for");
  Playback p;
  p.model = model;
  p.source = path;
  p.inputs = InputSchedule::fromCsvFile(*model, path);
  const auto& t = p.inputs.times_s;
  if (t.size() < 2) throw std::invalid_argument(path + ": needs at least two rows");
  if (std::abs(t.front()) > 1e-9)
    throw std::invalid_argument(path + ": the first row must be at t = 0");
  p.duration_s = t.back();
  const double h = (t.back() - t.front()) / (t.size() - 1);
  bool even = true;
  for (std::size_t i = 1; i < t.size(); ++i) even = even && std::abs(t[i] - t[i - 1] - h) < 1e-6;
  if (even)
    p.rate_hz = 1.0 / h;
  else if (rate_hz > 0)
    p.rate_hz = rate_hz;
  else
    throw std::invalid_argument(path + ": the rows are not evenly spaced; give --send-rate HZ");
  return p;
}

namespace {

// The longest ramp (s): at the slowest limits a model allows, a ramp could otherwise outlast
// any run (and its rows any memory).
constexpr double kMaxRamp_s = 600.0;
// The longest play (s), at most 3.6 million rows at 1 kHz.
constexpr double kMaxPlay_s = 3600.0;

// Quintic smoothstep: s(0) = 0, s(1) = 1, zero velocity and acceleration at both ends.
// Peak |s'| = 15/8, peak |s''| = 10/sqrt(3).
double smoothstep5(double u) {
  return u * u * u * (10.0 + u * (-15.0 + 6.0 * u));
}

// Rows from `from` to `to` (excluding `to`) at rate_hz, each variable within `fraction` of its
// speed and acceleration limits; empty when no variable moves by more than o.ramp_tolerance.
Eigen::MatrixXd rampRows(const Model& model, const Eigen::VectorXd& from, const Eigen::VectorXd& to,
                         double rate_hz, const StreamOptions& o) {
  const Eigen::VectorXd delta = to - from;
  if (!(delta.cwiseAbs().maxCoeff() > o.ramp_tolerance)) return Eigen::MatrixXd(0, model.nk());
  double duration =
      quinticMoveDuration_s(model, delta, o.ramp_limit_fraction, o.ramp_tolerance);
  duration = std::max(duration, o.min_ramp_s);
  if (!(duration <= kMaxRamp_s))
    throw FieldError("ramp", "a ramp within the limits would last " + formatNumber(duration, 4) +
                                 " s (at most " + formatNumber(kMaxRamp_s) + " s)");
  const int k = static_cast<int>(std::ceil(duration * rate_hz));
  Eigen::MatrixXd rows(k, model.nk());
  for (int i = 0; i < k; ++i)
    rows.row(i) = (from + smoothstep5(static_cast<double>(i) / k) * (to - from)).transpose();
  return rows;
}

// The performance at its own rate: row i at t = i / rate_hz, the last at its end (the schedule's
// own rows when they are spaced so, as a plan's and an evenly spaced CSV's are).
Eigen::MatrixXd ownRateSamples(const Playback& perf) {
  const auto& t = perf.inputs.times_s;
  const long n = static_cast<long>(std::ceil(perf.duration_s * perf.rate_hz - 1e-9)) + 1;
  bool own = static_cast<long>(t.size()) == n;
  for (long i = 0; own && i < n; ++i) own = std::abs(t[i] - i / perf.rate_hz) <= 1e-6;
  if (own) return perf.inputs.values;
  Eigen::MatrixXd rows(n, perf.model->nk());
  Eigen::VectorXd u(perf.model->nk());
  for (long i = 0; i < n; ++i) {
    perf.inputs.at(std::min(perf.duration_s, i / perf.rate_hz), u);
    rows.row(i) = u.transpose();
  }
  return rows;
}

void append(Eigen::MatrixXd& m, const Eigen::MatrixXd& more) {
  Eigen::MatrixXd out(m.rows() + more.rows(), std::max(m.cols(), more.cols()));
  out << m, more;
  m = std::move(out);
}

}  // namespace

Stream buildStream(const Playback& perf, const Eigen::VectorXd& rig_now,
                   const StreamOptions& o) {
  const Model& model = *perf.model;
  const int nk = model.nk();
  if (rig_now.size() != nk)
    throw std::invalid_argument("the rig reported " + std::to_string(rig_now.size()) +
                                " setpoints; '" + model.name + "' has " + std::to_string(nk));
  for (int j = 0; j < nk; ++j) {
    const KinematicVariable& kv = model.kinematic[j];
    const double tol = rangeTolerance(kv);
    if (!(rig_now[j] >= kv.lower - tol && rig_now[j] <= kv.upper + tol))
      throw FieldError("rig_now", "the rig reports " + kv.name + " = " +
                                      formatNumber(rig_now[j]) + ", beyond its range [" +
                                      formatNumber(kv.lower) + ", " + formatNumber(kv.upper) +
                                      "]");
  }
  if (!(o.rate_scale > 0.0) || o.rate_scale > 4.0 || !std::isfinite(o.rate_scale))
    throw FieldError("rate_scale", "must be in (0, 4], got " + formatNumber(o.rate_scale));
  if (!(o.settle_s >= 0 && o.settle_s <= 60))
    throw FieldError("settle_s", "must be in [0, 60] s, got " + formatNumber(o.settle_s));
  if (!(o.min_ramp_s >= 0 && o.min_ramp_s <= 60))
    throw FieldError("min_ramp_s", "must be in [0, 60] s, got " + formatNumber(o.min_ramp_s));
  if (!(o.ramp_limit_fraction > 0 && o.ramp_limit_fraction <= 1))
    throw FieldError("ramp_limit_fraction",
                     "must be in (0, 1], got " + formatNumber(o.ramp_limit_fraction));
  if (!(o.ramp_tolerance >= 0 && o.ramp_tolerance <= 1e-3))
    throw FieldError("ramp_tolerance",
                     "must be in [0, 0.001], got " + formatNumber(o.ramp_tolerance));
  const double rate = o.send_rate_hz > 0 ? o.send_rate_hz : perf.rate_hz;
  if (!(rate >= 1.0 && rate <= 1000.0))
    throw FieldError("send_rate_hz", "must be in [1, 1000] Hz, got " + formatNumber(rate));
  if (!(perf.duration_s / o.rate_scale <= kMaxPlay_s))
    throw FieldError("rate_scale", perf.source + " would play for " +
                                       formatNumber(perf.duration_s / o.rate_scale, 4) +
                                       " s (at most " + formatNumber(kMaxPlay_s) + " s)");
  std::vector<char> held(nk, 0);
  for (const std::string& name : o.hold) {
    const int v = model.variableIndex(name) - model.nd();
    if (v < 0 || v >= nk) {
      throw FieldError("hold", "'" + name + "' is not a kinematic variable of '" + model.name +
                                   "' (" + joinNames(itemNames(model.kinematic)) + ")");
    }
    held[v] = 1;
  }

  Stream s;
  s.model = perf.model;
  s.rate_hz = rate;
  // Play: the performance's samples as they are at its own rate, else resampled at the send rate
  // and speed so that the limits they kept still hold (resample.hpp).
  Eigen::MatrixXd play_rows = resampleSamples(ownRateSamples(perf), perf.rate_hz, rate,
                                              o.rate_scale);
  for (int j = 0; j < nk; ++j)
    if (held[j]) play_rows.col(j).setConstant(rig_now[j]);
  const int play = static_cast<int>(play_rows.rows());
  const Eigen::VectorXd first = play_rows.row(0).transpose(),
                        last = play_rows.row(play - 1).transpose();
  auto addPhase = [](Eigen::MatrixXd& m, std::vector<Phase>& phases, std::vector<int>* samples,
                     const Eigen::MatrixXd& rows, Phase p) {
    append(m, rows);
    for (Eigen::Index i = 0; i < rows.rows(); ++i) {
      phases.push_back(p);
      if (samples) samples->push_back(static_cast<int>(i));
    }
  };
  const int settle = static_cast<int>(std::lround(o.settle_s * rate));
  auto settleRows = [&](const Eigen::MatrixXd& ramp) {
    return ramp.rows() ? Eigen::MatrixXd(first.transpose().replicate(settle, 1))
                       : Eigen::MatrixXd(0, nk);
  };
  s.rows.resize(0, nk);
  const Eigen::MatrixXd ramp_in = rampRows(model, rig_now, first, rate, o);
  addPhase(s.rows, s.phase, &s.sample, ramp_in, Phase::Ramp);
  addPhase(s.rows, s.phase, &s.sample, settleRows(ramp_in), Phase::Settle);
  s.play_begin = static_cast<int>(s.rows.rows());
  s.play_rows = play;
  addPhase(s.rows, s.phase, &s.sample, play_rows, Phase::Play);
  s.return_rows.resize(0, nk);
  const Eigen::MatrixXd back = rampRows(model, last, first, rate, o);
  addPhase(s.return_rows, s.return_phase, nullptr, back, Phase::Return);
  addPhase(s.return_rows, s.return_phase, nullptr, settleRows(back), Phase::Settle);
  return s;
}

std::vector<std::string> validateStream(const Model& model, const Stream& s) {
  // Everything that can be sent, in an order that has every transition: ramp-in, settle,
  // play, the way back, and the next play.
  Eigen::MatrixXd all = s.rows;
  std::vector<std::pair<Phase, int>> where;
  for (std::size_t i = 0; i < s.phase.size(); ++i) where.emplace_back(s.phase[i], s.sample[i]);
  append(all, s.return_rows);
  int n = 0;
  for (Phase p : s.return_phase) where.emplace_back(p, n++);
  // (the whole play again: cut short, its end would read as a stop from full speed)
  const int again = s.play_rows;
  append(all, s.rows.middleRows(s.play_begin, again));
  for (int i = 0; i < again; ++i) where.emplace_back(Phase::Play, i);

  std::vector<std::string> out;
  for (const LimitViolation& v : checkInputLimits(model, all, s.rate_hz)) {
    const auto& kv = model.kinematic[model.variableIndex(v.variable) - model.nd()];
    const auto [phase, sample] = where[static_cast<std::size_t>(v.sample)];
    std::ostringstream m;
    m.precision(6);
    m << v.variable << ": ";
    if (v.limit == "range")
      m << v.value << " outside the range [" << kv.lower << ", " << kv.upper << "]";
    else
      m << v.limit << " " << v.value << " > max_" << (v.limit == "speed" ? "speed " : "accel ")
        << v.bound;
    m << " at " << toString(phase) << " sample " << sample << " (t = " << sample / s.rate_hz
      << " s into the " << toString(phase) << ")";
    out.push_back(m.str());
  }
  return out;
}

}  // namespace marionette::executor
