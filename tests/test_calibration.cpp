// SPDX-License-Identifier: BSD-3-Clause
// Calibration at rest (control/calibration.hpp): a known string and mass error of a simulated
// truth found from its markers, with an uncertainty that covers it; what the poses cannot
// identify refused, named.
#include <gtest/gtest.h>

#include <random>

#include "marionette/control/calibration.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"

using namespace marionette;
using namespace marionette::control;

namespace {

// The truth's markers at rest at each pose: the mean of `samples` measurements with Gaussian
// noise of noise_m.
std::vector<CalibrationPose> measureAtRest(const ModelPtr& truth, const MeasurementSpec& spec,
                                           const std::vector<Eigen::VectorXd>& rhos, int samples,
                                           double noise_m, unsigned seed) {
  MeasurementModel h(truth, spec);
  DynamicsData data(*truth);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, noise_m / std::sqrt(double(samples)));
  std::vector<CalibrationPose> poses;
  for (const Eigen::VectorXd& rho : rhos) {
    const RestPose r = computeRestPose(truth, rho);
    EXPECT_TRUE(r.ok) << r.message;
    CalibrationPose p;
    p.rho = rho;
    h.evaluate(data, truth->configuration(r.q, rho), p.y);
    for (Eigen::Index i = 0; i < p.y.size(); ++i) p.y[i] += noise(rng);
    p.samples = samples;
    poses.push_back(p);
  }
  return poses;
}

const CalibratedParameter& parameter(const Calibration& c, const std::string& name) {
  for (const CalibratedParameter& p : c.parameters)
    if (p.name == name) return p;
  throw std::runtime_error("no parameter " + name);
}

}  // namespace

TEST(Calibration, FindsTheShoulderStringsAndAHandsMassOnPuppetCopterFromItsMarkersAtRest) {
  const ModelPtr model = loadModel("puppetcopter");
  // The truth: both shoulder strings 5 mm longer (the bar's error), the left forearm 10 %
  // heavier.
  auto truth = std::make_shared<Model>(*model);
  for (String& s : truth->strings)
    if (s.length_variable < 0) s.length_m += 0.005;
  const int forearm = [&] {
    for (std::size_t i = 0; i < truth->masses.size(); ++i)
      if (truth->masses[i].name == "arm_l_2") return static_cast<int>(i);
    return -1;
  }();
  ASSERT_GE(forearm, 0);
  truth->masses[forearm].mass_kg *= 1.10;
  truth->masses[forearm].inertia_kgm2 *= 1.10;

  const MeasurementSpec spec = MeasurementSpec::allPoints(*model, 0.002);
  CalibrationOptions options;
  options.masses = {"arm_l_2"};
  const std::vector<Eigen::VectorXd> rhos =
      chooseCalibrationPoses(model, spec, model->defaultInputs(), 5, options);
  ASSERT_EQ(rhos.size(), 5u);
  EXPECT_EQ(rhos[0], model->defaultInputs());
  // 30 samples a pose: 1 s of markers at 30 Hz, 2 mm noise each.
  const std::vector<CalibrationPose> poses = measureAtRest(truth, spec, rhos, 30, 0.002, 7);
  const Calibration c = calibrateAtRest(model, spec, poses, options);
  ASSERT_EQ(c.parameters.size(), 3u);
  EXPECT_TRUE(c.converged);
  for (const char* name : {"shoulder_l", "shoulder_r"}) {
    const CalibratedParameter& p = parameter(c, name);
    EXPECT_NEAR(p.fitted - p.nominal, 0.005, 0.001) << name;
    // The uncertainty says how well: the error is within 4 of its standard deviations, which
    // are well under a millimetre.
    EXPECT_LT(std::abs(p.fitted - p.nominal - 0.005), 4 * p.std + 1e-5) << name;
    EXPECT_LT(p.std, 0.5e-3) << name;
  }
  const CalibratedParameter& mass = parameter(c, "arm_l_2");
  EXPECT_NEAR(mass.fitted, 1.10, 0.03);
  EXPECT_LT(mass.std, 0.03);
  // The fitted model explains the markers to the noise: the residual's chi-square per degree of
  // freedom is about 1, and every pose is within 1.5 noise deviations of the mean (2 mm /
  // sqrt(30)) rms, where the nominal model was millimetres off at most of them.
  EXPECT_LT(c.chi2_per_dof, 2.0);
  EXPECT_GT(c.chi2_per_dof, 0.3);
  double nominal = 0.0, fitted = 0.0;
  for (std::size_t i = 0; i < poses.size(); ++i) {
    EXPECT_LT(c.pose_rms_m[i], 1.5 * 0.002 / std::sqrt(30.0)) << "pose " << i;
    nominal += c.nominal_pose_rms_m[i];
    fitted += c.pose_rms_m[i];
  }
  EXPECT_GT(nominal, 10 * fitted);
  // The calibrated model carries the fitted values.
  EXPECT_DOUBLE_EQ(
      c.model->strings[static_cast<std::size_t>(parameter(c, "shoulder_l").index)].length_m,
      parameter(c, "shoulder_l").fitted);
  EXPECT_NEAR(c.model->masses[forearm].mass_kg / model->masses[forearm].mass_kg, mass.fitted,
              1e-12);
}

TEST(Calibration, WhatThePosesCannotIdentifyIsRefusedNamingIt) {
  const ModelPtr model = loadModel("puppetcopter");
  const MeasurementSpec spec = MeasurementSpec::allPoints(*model, 0.002);
  const std::vector<CalibrationPose> one =
      measureAtRest(model, spec, {model->defaultInputs()}, 10, 0.002, 1);
  auto refused = [&](const CalibrationOptions& o, const std::vector<CalibrationPose>& poses) {
    try {
      calibrateAtRest(model, spec, poses, o);
    } catch (const FieldError& e) {
      return e.field() + ": " + e.problem();
    }
    return std::string("accepted");
  };
  // Every mass scaled alike leaves every rest pose as it was: only ratios show.
  CalibrationOptions all;
  for (const Mass& m : model->masses) all.masses.push_back(m.name);
  EXPECT_NE(refused(all, one).find("cannot tell"), std::string::npos) << refused(all, one);
  CalibrationOptions unknown;
  unknown.masses = {"tail"};
  EXPECT_EQ(refused(unknown, one), "masses[0]: 'tail' is not a mass of 'puppetcopter'");
  EXPECT_NE(refused(CalibrationOptions{}, {}).find("poses: no pose"), std::string::npos);
  CalibrationOptions nothing;
  nothing.strings = false;
  EXPECT_NE(refused(nothing, one).find("nothing to fit"), std::string::npos);
  CalibrationOptions zero;
  zero.max_iterations = 0;
  EXPECT_NE(refused(zero, one).find("max_iterations"), std::string::npos);
  // Fewer measured values than parameters: one encoder, one pose, two strings.
  MeasurementSpec tiny;
  tiny.encoders = {"body_z"};
  const std::vector<CalibrationPose> one_value =
      measureAtRest(model, tiny, {model->defaultInputs()}, 1, 0.002, 1);
  try {
    calibrateAtRest(model, tiny, one_value, CalibrationOptions{});
    ADD_FAILURE() << "one value for two strings was accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "poses");
    EXPECT_NE(std::string(e.what()).find("1 pose(s) give 1 measured values for 2 parameters"),
              std::string::npos)
        << e.what();
  }
}

// The inputs an operator holds never move in any pose, and the poses are the best among those
// that keep them: with the left arm's three inputs held, 20 poses leave them at the start.
TEST(Calibration, HeldInputsStayAtTheStartInEveryPose) {
  const ModelPtr model = loadModel("puppetcopter");
  const MeasurementSpec spec = MeasurementSpec::allPoints(*model, 0.002);
  const Eigen::VectorXd start = model->defaultInputs();
  std::vector<char> fixed(static_cast<std::size_t>(model->nk()), 0);
  std::vector<int> held;
  for (const char* name : {"act_arm_l_yaw", "act_arm_l_pitch", "act_arm_l_len"}) {
    held.push_back(model->variableIndex(name) - model->nd());
    fixed[static_cast<std::size_t>(held.back())] = 1;
  }
  const std::vector<Eigen::VectorXd> free =
      chooseCalibrationPoses(model, spec, start, 20, CalibrationOptions{});
  bool moved = false;  // (without the mask, the arm is among the inputs the poses move)
  for (const Eigen::VectorXd& rho : free)
    for (int j : held) moved |= rho[j] != start[j];
  EXPECT_TRUE(moved);
  const std::vector<Eigen::VectorXd> poses =
      chooseCalibrationPoses(model, spec, start, 12, CalibrationOptions{}, 0.15, nullptr, fixed);
  ASSERT_EQ(poses.size(), 12u);
  for (const Eigen::VectorXd& rho : poses)
    for (int j : held) EXPECT_EQ(rho[j], start[j]) << model->kinematic[j].name;
  // 9 inputs free, each either way, and the start: 19 candidates at most; 20 is refused.
  EXPECT_THROW(
      chooseCalibrationPoses(model, spec, start, 20, CalibrationOptions{}, 0.15, nullptr, fixed),
      FieldError);
  std::vector<char> wrong_size(2, 0);
  EXPECT_THROW(chooseCalibrationPoses(model, spec, start, 2, CalibrationOptions{}, 0.15, nullptr,
                                      wrong_size),
               FieldError);
}

// A fit the markers' noise cannot explain is refused, naming the markers that disagree most:
// the truth's left and right elbows and knees swapped (a rig file's markers mixed up).
TEST(Calibration, AFitTheNoiseCannotExplainIsRefusedNamingTheWorstMarkers) {
  const ModelPtr model = loadModel("puppetcopter");
  auto swapped = std::make_shared<Model>(*model);
  for (const char* pair : {"elbow", "knee"}) {
    const int l = model->pointIndex(std::string(pair) + "_l");
    const int r = model->pointIndex(std::string(pair) + "_r");
    ASSERT_GE(l, 0);
    ASSERT_GE(r, 0);
    std::swap(swapped->points[static_cast<std::size_t>(l)].frame,
              swapped->points[static_cast<std::size_t>(r)].frame);
    std::swap(swapped->points[static_cast<std::size_t>(l)].position_m,
              swapped->points[static_cast<std::size_t>(r)].position_m);
  }
  const MeasurementSpec spec = MeasurementSpec::allPoints(*model, 0.002);
  const std::vector<Eigen::VectorXd> rhos =
      chooseCalibrationPoses(model, spec, model->defaultInputs(), 3, CalibrationOptions{});
  // The same measurements from the right truth pass, with chi2 / dof about 1.
  const Calibration good =
      calibrateAtRest(model, spec, measureAtRest(model, spec, rhos, 30, 0.002, 3),
                      CalibrationOptions{});
  EXPECT_LT(good.chi2_per_dof, 2.0);
  ASSERT_FALSE(good.marker_misfit.empty());
  EXPECT_LT(good.marker_misfit.front().second, 3.0);
  try {
    calibrateAtRest(model, spec, measureAtRest(swapped, spec, rhos, 30, 0.002, 3),
                    CalibrationOptions{});
    ADD_FAILURE() << "a fit of swapped markers was accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "fit");
    const std::string what = e.problem();
    EXPECT_NE(what.find("chi2/dof"), std::string::npos) << what;
    // The worst three are swapped ones.
    const std::string worst = what.substr(what.find("deviations rms: "));
    int named = 0;
    for (const char* p : {"elbow_l", "elbow_r", "knee_l", "knee_r"})
      named += worst.find(p) != std::string::npos;
    EXPECT_GE(named, 3) << what;
  }
  CalibrationOptions bad;
  bad.max_chi2_per_dof = 0.5;
  EXPECT_THROW(checkCalibrationOptions(bad), FieldError);
}
