// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/executor/rig_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "marionette/common/json_text.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette::executor {

namespace {

// The stream that takes the rig from `from` to `pose` and holds it there for hold_s.
Stream holdStream(const ModelPtr& model, const Eigen::VectorXd& from, const Eigen::VectorXd& pose,
                  double hold_s, double rate_hz, int index, const std::vector<std::string>& held) {
  Playback p;
  p.model = model;
  p.inputs.defaults = pose;
  p.inputs.times_s = {0.0, hold_s};
  p.inputs.values = pose.transpose().replicate(2, 1);
  p.duration_s = hold_s;
  p.rate_hz = rate_hz;
  p.source = formatted("calibration pose %d", index);
  StreamOptions so;
  so.send_rate_hz = rate_hz;
  so.hold = held;  // (where the rig has them: every pose has them there)
  // Slow, smooth moves: a light puppet swings for long after a quick one.
  so.ramp_limit_fraction = 0.25;
  so.min_ramp_s = 3.0;
  return buildStream(p, from, so);
}
}  // namespace

void checkRigCalibrationOptions(const RigCalibrationOptions& o) {
  if (!(o.poses >= 1 && o.poses <= kMaxCalibrationPoses))
    throw FieldError("poses",
                     formatted("must be in [1, %d], got %d", kMaxCalibrationPoses, o.poses));
  if (!(o.share > 0 && o.share <= 0.5))
    throw FieldError("share", "must be in (0, 0.5], got " + formatNumber(o.share));
  if (!(o.settle_s >= 0 && o.settle_s <= 60))
    throw FieldError("settle_s", "must be in [0, 60] s, got " + formatNumber(o.settle_s));
  if (!(o.measure_s > 0 && o.measure_s <= 60))
    throw FieldError("measure_s", "must be in (0, 60] s, got " + formatNumber(o.measure_s));
  if (!(o.send_rate_hz >= 1 && o.send_rate_hz <= 1000))
    throw FieldError("send_rate_hz",
                     "must be in [1, 1000] Hz, got " + formatNumber(o.send_rate_hz));
  control::checkCalibrationOptions(o.fit);
}

namespace {
// The held inputs as a mask over the model's inputs; FieldError("held") for a name that is not one.
std::vector<char> heldMask(const Model& model, const std::vector<std::string>& held) {
  std::vector<char> mask(static_cast<std::size_t>(model.nk()), 0);
  for (const std::string& name : held) {
    bool found = false;
    for (std::size_t j = 0; j < mask.size(); ++j)
      if (model.kinematic[j].name == name) {
        mask[j] = 1;
        found = true;
      }
    if (!found)
      throw FieldError("held", "'" + name + "' is not a kinematic variable of '" + model.name +
                                   "' (" + joinNames(itemNames(model.kinematic)) + ")");
  }
  return mask;
}
}  // namespace

RigCalibration calibrateOnRig(RigDriver& rig, const ModelPtr& model, const RigCalibrationOptions& o,
                              const LinkOptions& link) {
  checkRigCalibrationOptions(o);
  const std::vector<char> held = heldMask(*model, o.held);
  const Sensing* sensing = rig.sensing();
  if (!sensing)
    throw FieldError("rig", rig.uri() + " declares no measurements: nothing to calibrate from");
  const control::MeasurementSpec spec = sensing->spec();
  const control::MeasurementModel h(model, spec);
  const Clock::time_point t0 = rig.now();
  RigCalibration out;
  auto failed = [&](std::string message) {
    out.message = std::move(message);
    out.elapsed_s = std::chrono::duration<double>(rig.now() - t0).count();
    return out;
  };
  Eigen::VectorXd now = rig.readSetpoints();
  rig.markPreparation();
  out.poses = control::chooseCalibrationPoses(model, spec, now, o.poses, o.fit, o.share,
                                              o.acceptable, held);
  for (const Eigen::VectorXd& pose : out.poses)
    for (int j = 0; j < model->nk(); ++j)
      if (held[static_cast<std::size_t>(j)] && pose[j] != now[j])
        throw FieldError("held", "a chosen pose moves the held input '" +
                                     model->kinematic[static_cast<std::size_t>(j)].name + "'");
  // Back to the start at the end, measured again: the run begins there, with the puppet at rest
  // in the equilibrium that measurement shows.
  if (out.poses.size() > 1) out.poses.push_back(out.poses.front());
  {
    // What the poses can identify is known before anything moves: the fit on the model's own
    // predictions refuses what they cannot tell.
    std::vector<control::CalibrationPose> predicted;
    DynamicsData data(*model);
    Eigen::VectorXd previous = model->initialDynamic();
    for (const Eigen::VectorXd& rho : out.poses) {
      const RestPose r = computeRestPose(model, rho, &previous, o.fit.rest);
      if (!r.ok)
        throw FieldError("poses", "no rest pose of the model at a chosen pose: " + r.message);
      previous = r.q;
      control::CalibrationPose p;
      p.rho = rho;
      h.evaluate(data, model->configuration(r.q, rho), p.y);
      // One measurement a pose: a swing the window does not average out makes the real
      // deviations larger than the noise and the samples alone would say.
      p.samples = 1;
      predicted.push_back(p);
    }
    control::checkCalibrationPoses(model, spec, predicted, o.fit);
  }
  const Eigen::VectorXd sigma = h.noiseVariance().cwiseSqrt();
  std::vector<control::CalibrationPose> measured;
  for (std::size_t i = 0; i < out.poses.size(); ++i) {
    const Stream stream = holdStream(model, now, out.poses[i], o.settle_s + o.measure_s,
                                     o.send_rate_hz, static_cast<int>(i), o.held);
    if (const std::vector<std::string> problems = validateStream(*model, stream);
        !problems.empty()) {
      const std::string why =
          formatted("calibration pose %zu: the move breaks a limit: ", i) + problems.front();
      if (i == 0) throw FieldError("poses", why);  // nothing has moved yet
      return failed(why);
    }
    // Measurements taken after the settle (and the rig's latency) are averaged.
    const int first_kept =
        static_cast<int>(std::ceil((o.settle_s + sensing->latency_s) * o.send_rate_hz));
    std::vector<Eigen::VectorXd> kept;
    std::vector<MeasurementFrame> inbox;
    long corrupt = 0;
    ExecuteOptions eo(link);  // the operator's: every frame under the same watch
    eo.keep_send_lateness = false;
    eo.after_frame = [&](RigDriver& r, Phase phase, int sample) {
      inbox.clear();
      r.pollMeasurements(inbox, &corrupt);
      if (phase != Phase::Play || sample < first_kept) return;
      for (const MeasurementFrame& f : inbox)
        if (f.values.size() == h.size() && f.values.allFinite()) kept.push_back(f.values);
    };
    // About when the first frame goes out (execute sends it at once), as ClosedLoop takes its
    // own: the rig's clock starts there.
    if (!out.first_frame_sent) out.first_frame_sent = rig.now();
    out.moves = execute(rig, stream, eo);
    if (out.moves.last_sent.size()) now = out.moves.last_sent;
    if (out.moves.reason != StopReason::Completed) {
      return failed(formatted("calibration pose %zu: ", i) + out.moves.message);
    }
    const int n = static_cast<int>(kept.size());
    out.samples.push_back(n);
    if (n < 2) {
      return failed(
          formatted("calibration pose %zu: %d measurement(s) came in while the rig "
                    "held it still (%.2f s): at least 2 are needed",
                    i, n, o.measure_s));
    }
    const int half = n / 2;
    Eigen::VectorXd first = Eigen::VectorXd::Zero(h.size()), second = first;
    for (int k = 0; k < n; ++k) (k < half ? first : second) += kept[static_cast<std::size_t>(k)];
    control::CalibrationPose p;
    p.rho = out.poses[i];
    p.y = (first + second) / n;
    p.samples = n;
    first /= half;
    second /= n - half;
    // A puppet still swinging a little: each mean is known to about half the difference of its
    // halves' means, when that is more than the noise says.
    const Eigen::VectorXd change = (second - first).cwiseAbs();
    out.drift.push_back(change.maxCoeff());
    p.std = (sigma / std::sqrt(double(n))).cwiseMax(0.5 * change);
    measured.push_back(p);
  }
  try {
    out.fit = control::calibrateAtRest(model, spec, measured, o.fit);
  } catch (const FieldError& e) {  // what the measurements cannot support, after the moves
    return failed("the fit: " + (e.field() == "fit" ? "" : e.field() + ": ") + e.problem());
  }
  out.ok = true;
  out.elapsed_s = std::chrono::duration<double>(rig.now() - t0).count();
  return out;
}

void writeCalibrationJson(std::ostream& os, const RigCalibration& c, const std::string& indent) {
  const control::Calibration& f = c.fit;
  const std::streamsize precision = os.precision();
  os << "{\n" << indent << "  ";
  JsonMembers m(os, ",\n" + indent + "  ");
  m.key("poses") << c.poses.size();
  std::vector<double> samples(c.samples.begin(), c.samples.end());
  m.numbers("samples", samples.data(), samples.size());
  m.numbers("drift", c.drift.data(), c.drift.size());
  m.key("parameters") << "[";
  for (std::size_t k = 0; k < f.parameters.size(); ++k) {
    const control::CalibratedParameter& p = f.parameters[k];
    os << (k ? ",\n" : "\n") << indent << "    {";
    JsonMembers each(os, ", ");
    each.text("name", p.name);
    each.text("kind", p.kind == control::CalibratedParameter::Kind::StringLength ? "string_length"
                                                                                 : "mass_scale");
    each.text("unit", p.unit());
    os.precision(9);
    each.numbers({{"nominal", p.nominal}, {"fitted", p.fitted}});
    os.precision(3);
    each.number("std", p.std);
    os.precision(precision);
    os << "}";
  }
  os << "\n" << indent << "  ]";
  m.numbers({{"rms_residual_m", f.rms_residual_m},
             {"nominal_rms_residual_m", f.nominal_rms_residual_m},
             {"max_residual_m", f.max_residual_m},
             {"chi2_per_dof", f.chi2_per_dof}});
  m.key("iterations") << f.iterations;
  m.key("converged") << (f.converged ? "true" : "false");
  m.numbers("pose_rms_m", f.pose_rms_m.data(), f.pose_rms_m.size());
  m.numbers("nominal_pose_rms_m", f.nominal_pose_rms_m.data(), f.nominal_pose_rms_m.size());
  m.number("elapsed_s", c.elapsed_s);
  os << "\n" << indent << "}";
}

}  // namespace marionette::executor
