// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/control/calibration.hpp"

#include <Eigen/Cholesky>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <memory>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette::control {

namespace {
// A parameter's typical size (the identifiability test and the pose choice compare the
// parameters at these): a string a millimetre off, a mass a percent off.
constexpr double kTypicalLength_m = 1e-3;
constexpr double kTypicalScale = 1e-2;
// Finite-difference steps, in the parameter's unit: the rest poses are polished to ~1e-12.
constexpr double kLengthStep_m = 1e-6;
constexpr double kScaleStep = 1e-6;
// A parameter whose typical change moves the weighted measurements by less than this (in
// standard deviations, summed in quadrature) shows in no marker.
constexpr double kNoEffect = 1e-3;
constexpr int kMaxIterationsBound = 1000;
constexpr double kMinMassScale = 0.05;  // a fitted mass at least this share of its model value
// The largest standard deviation a fit may leave a parameter with (beyond, it says nothing of it).
constexpr double kMaxStringStd_m = 0.01;
constexpr double kMaxMassScaleStd = 0.5;
constexpr int kNearestIterations = 30;  // Gauss-Newton steps towards a measured configuration
// A string or stop this near to tight in the measured configuration starts Newton engaged.
constexpr double kMeasuredTautGap_m = 2e-3;

double typical(const CalibratedParameter& p) {
  return p.kind == CalibratedParameter::Kind::StringLength ? kTypicalLength_m : kTypicalScale;
}
double fdStep(const CalibratedParameter& p) {
  return p.kind == CalibratedParameter::Kind::StringLength ? kLengthStep_m : kScaleStep;
}
std::string describe(const CalibratedParameter& p) {
  return p.kind == CalibratedParameter::Kind::StringLength ? "string '" + p.name + "' (length)"
                                                           : "mass '" + p.name + "'";
}

std::vector<CalibratedParameter> parametersOf(const Model& model, const CalibrationOptions& o) {
  std::vector<CalibratedParameter> ps;
  if (o.strings)
    for (int s = 0; s < model.nstrings(); ++s)
      if (model.strings[s].length_variable < 0) {
        CalibratedParameter p;
        p.kind = CalibratedParameter::Kind::StringLength;
        p.index = s;
        p.name = model.strings[s].name;
        p.nominal = p.fitted = model.strings[s].length_m;
        ps.push_back(p);
      }
  for (std::size_t i = 0; i < o.masses.size(); ++i) {
    const std::string& name = o.masses[i];
    auto it = std::find_if(model.masses.begin(), model.masses.end(),
                           [&](const Mass& m) { return m.name == name; });
    if (it == model.masses.end())
      throw FieldError("masses[" + std::to_string(i) + "]",
                       "'" + name + "' is not a mass of '" + model.name + "'");
    const int index = static_cast<int>(it - model.masses.begin());
    for (const CalibratedParameter& q : ps)
      if (q.kind == CalibratedParameter::Kind::MassScale && q.index == index)
        throw FieldError("masses[" + std::to_string(i) + "]", "'" + name + "' is listed twice");
    CalibratedParameter p;
    p.kind = CalibratedParameter::Kind::MassScale;
    p.index = index;
    p.name = name;
    p.nominal = p.fitted = 1.0;
    ps.push_back(p);
  }
  if (ps.empty())
    throw FieldError(o.strings ? "strings" : "masses",
                     o.strings ? "nothing to fit: '" + model.name +
                                     "' has no constant-length string and no mass is named"
                               : std::string("nothing to fit: name a mass, or fit the strings"));
  return ps;
}

// The rest poses and the weighted residuals of the model with parameters theta.
struct Evaluation {
  std::vector<RestPose> rest;
  Eigen::VectorXd residual;  // weighted: (h(q*) - y) / sigma, all poses stacked
  std::string failure;       // "" when every rest pose was found
};

class Problem {
 public:
  Problem(const ModelPtr& model, const MeasurementSpec& spec, std::vector<CalibratedParameter> ps,
          const RestPoseOptions& rest)
      : model_(model),
        measurement_(model, spec),
        data_(*model),
        params_(std::move(ps)),
        rest_(rest) {
    sigma_ = measurement_.noiseVariance().cwiseSqrt();
  }
  int size() const { return measurement_.size(); }
  int parameters() const { return static_cast<int>(params_.size()); }
  // Per marker ("hand_l" of "hand_l.x", ...) or encoder, worst first: the rms of its entries of
  // the weighted residual (all poses stacked).
  std::vector<std::pair<std::string, double>> markerMisfit(const Eigen::VectorXd& residual) const {
    std::vector<std::pair<std::string, double>> out;
    std::vector<int> count;
    const int ny = size();
    for (Eigen::Index e = 0; e < residual.size(); ++e) {
      const std::string& entry = measurement_.names()[static_cast<std::size_t>(e % ny)];
      const std::string name = entry.substr(0, entry.rfind('.'));
      std::size_t k = 0;
      while (k < out.size() && out[k].first != name) ++k;
      if (k == out.size()) {
        out.emplace_back(name, 0.0);
        count.push_back(0);
      }
      out[k].second += residual[e] * residual[e];
      ++count[k];
    }
    for (std::size_t k = 0; k < out.size(); ++k) out[k].second = std::sqrt(out[k].second / count[k]);
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
  }
  const std::vector<CalibratedParameter>& params() const { return params_; }

  // rho for every pose, with y and each mean's deviation when `poses` (else only the rest poses:
  // residual is the prediction, unweighted).  from: the previous rest poses (continued), or none:
  // each pose settled from the one before it.
  Evaluation evaluate(const Eigen::VectorXd& theta, const std::vector<Eigen::VectorXd>& rhos,
                      const std::vector<CalibrationPose>* poses,
                      const std::vector<RestPose>* from) {
    Evaluation e;
    const ModelPtr m = withParameters(*model_, params_, theta);
    const int ny = size();
    e.residual.resize(static_cast<Eigen::Index>(rhos.size()) * ny);
    Eigen::VectorXd y;
    for (std::size_t i = 0; i < rhos.size(); ++i) {
      RestPose r;
      if (from) {
        // Continued from the nearby equilibrium (a derivative's step, a small update); settled
        // from it when the continuation does not hold.
        RestPoseOptions c = rest_;
        c.max_settle_steps = 0;
        c.continue_from = &(*from)[i];
        r = computeRestPose(m, rhos[i], &(*from)[i].q, c);
        if (!r.ok) r = computeRestPose(m, rhos[i], &(*from)[i].q, rest_);
      } else {
        // Followed from the pose before; with a measurement, from the configuration nearest it:
        // the equilibrium the puppet shows, where it has more than one.
        const Eigen::VectorXd previous = i ? e.rest[i - 1].q : m->initialDynamic();
        r = poses ? measuredRestPose(m, rhos[i], previous, (*poses)[i])
                  : computeRestPose(m, rhos[i], &previous, rest_);
      }
      if (!r.ok) {
        e.failure = formatted("pose %zu: no rest pose: %s", i, r.message.c_str());
        return e;
      }
      measurement_.evaluate(data_, m->configuration(r.q, rhos[i]), y);
      auto block = e.residual.segment(static_cast<Eigen::Index>(i) * ny, ny);
      if (poses) {
        block = (y - (*poses)[i].y).cwiseQuotient(meanStd((*poses)[i]));
      } else {
        block = y;
      }
      e.rest.push_back(std::move(r));
    }
    return e;
  }

  // The rest pose of m at rho that best explains the pose's measurement, where the puppet may
  // rest in more than one: from `previous` and from the model's guess, the equilibrium a
  // settling finds, and from the configuration nearest the measurement next to each, the one
  // Newton finds and the one a settling finds; whichever measures nearest.
  RestPose measuredRestPose(const ModelPtr& m, const Eigen::VectorXd& rho,
                            const Eigen::VectorXd& previous, const CalibrationPose& pose) {
    RestPose best;
    double best_cost = INFINITY;
    RestPoseOptions newton = rest_;
    newton.max_settle_steps = 0;
    newton.taut_guess_gap = kMeasuredTautGap_m;
    const Eigen::VectorXd w = meanStd(pose).cwiseInverse();
    Eigen::VectorXd y;
    for (const Eigen::VectorXd& from : {previous, m->initialDynamic()}) {
      const Eigen::VectorXd near = nearestConfiguration(*m, rho, from, pose);
      for (const auto& [guess, o] : {std::make_pair(&near, &newton), std::make_pair(&near, &rest_),
                                     std::make_pair(&from, &rest_)}) {
        RestPose r = computeRestPose(m, rho, guess, *o);
        if (!r.ok) continue;
        measurement_.evaluate(data_, m->configuration(r.q, rho), y);
        const double cost = (y - pose.y).cwiseProduct(w).squaredNorm();
        if (cost < best_cost) {
          best_cost = cost;
          best = std::move(r);
        }
      }
    }
    if (!best.ok) best = computeRestPose(m, rho, &previous, rest_);  // says why not
    return best;
  }

  // The configuration (n_d) whose measurement is nearest the pose's (weighted least squares,
  // Gauss-Newton from q, held within the joints' stops).
  Eigen::VectorXd nearestConfiguration(const Model& m, const Eigen::VectorXd& rho,
                                       Eigen::VectorXd q, const CalibrationPose& pose) {
    const Eigen::VectorXd w = meanStd(pose).cwiseInverse();
    Eigen::VectorXd y;
    Eigen::MatrixXd H;
    for (int it = 0; it < kNearestIterations; ++it) {
      measurement_.evaluate(data_, m.configuration(q, rho), y, &H);
      const Eigen::MatrixXd J = w.asDiagonal() * H;
      Eigen::MatrixXd A = J.transpose() * J;
      A.diagonal().array() += 1e-9 * (1.0 + A.diagonal().maxCoeff());
      const Eigen::VectorXd dq = -A.ldlt().solve(J.transpose() * (y - pose.y).cwiseProduct(w));
      q += dq;
      for (int j = 0; j < m.nd(); ++j) {
        const JointLimit& l = m.dynamic[static_cast<std::size_t>(j)].limit;
        if (l.isStop()) q[j] = std::min(std::max(q[j], l.lower), l.upper);
      }
      if (!(dq.cwiseAbs().maxCoeff() > 1e-10)) break;
    }
    return q.allFinite() ? q : m.initialDynamic();
  }

  // d residual / d theta (columns in the parameters' units) by forward differences from `base`.
  Eigen::MatrixXd jacobian(const Eigen::VectorXd& theta, const Evaluation& base,
                           const std::vector<Eigen::VectorXd>& rhos,
                           const std::vector<CalibrationPose>* poses, std::string& failure) {
    Eigen::MatrixXd J(base.residual.size(), parameters());
    for (int k = 0; k < parameters(); ++k) {
      Eigen::VectorXd t = theta;
      const double h = fdStep(params_[static_cast<std::size_t>(k)]);
      t[k] += h;
      const Evaluation e = evaluate(t, rhos, poses, &base.rest);
      if (!e.failure.empty()) {
        failure = describe(params_[static_cast<std::size_t>(k)]) + " moved: " + e.failure;
        return J;
      }
      J.col(k) = (e.residual - base.residual) / h;
    }
    return J;
  }

  Eigen::VectorXd nominal() const {
    Eigen::VectorXd t(parameters());
    for (int k = 0; k < parameters(); ++k) t[k] = params_[static_cast<std::size_t>(k)].nominal;
    return t;
  }
  Eigen::VectorXd typicalSizes() const {
    Eigen::VectorXd s(parameters());
    for (int k = 0; k < parameters(); ++k) s[k] = typical(params_[static_cast<std::size_t>(k)]);
    return s;
  }
  const Eigen::VectorXd& sigma() const { return sigma_; }
  // A pose's means' standard deviations.
  Eigen::VectorXd meanStd(const CalibrationPose& p) const {
    return p.std.size() ? p.std : Eigen::VectorXd(sigma_ / std::sqrt(double(p.samples)));
  }

 private:
  ModelPtr model_;
  MeasurementModel measurement_;
  DynamicsData data_;
  std::vector<CalibratedParameter> params_;
  RestPoseOptions rest_;
  Eigen::VectorXd sigma_;
};

// Throws FieldError naming what the weighted Jacobian J cannot identify: a parameter that moves
// no marker, two the poses cannot tell apart, or one whose standard deviation would be more than
// its largest credible error (kMaxStd: the fit would say nothing about it).
void checkIdentifiable(const Eigen::MatrixXd& J, const Problem& p, double min_relative_sv) {
  const Eigen::MatrixXd scaled = J * p.typicalSizes().asDiagonal();
  const auto param = [&](Eigen::Index k) -> const CalibratedParameter& {
    return p.params()[static_cast<std::size_t>(k)];
  };
  const auto field = [&](Eigen::Index k) {
    return param(k).kind == CalibratedParameter::Kind::StringLength ? "strings" : "masses";
  };
  const std::string cannot = " cannot be identified from these poses: ";
  const std::string advice = "; hold other or more poses, or fit fewer parameters";
  for (int k = 0; k < p.parameters(); ++k)
    if (!(scaled.col(k).norm() >= kNoEffect))
      throw FieldError(field(k), describe(param(k)) + cannot +
                                     "it moves no marker (slack, or carried by strings whatever "
                                     "it weighs, in every one)" +
                                     advice);
  Eigen::MatrixXd normalised = scaled;
  for (int k = 0; k < p.parameters(); ++k) normalised.col(k).normalize();
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(normalised, Eigen::ComputeThinV);
  const Eigen::VectorXd& s = svd.singularValues();
  if (s.size() && s[s.size() - 1] < min_relative_sv * s[0]) {
    const Eigen::VectorXd v = svd.matrixV().col(s.size() - 1).cwiseAbs();
    Eigen::Index a = 0, b = 0;
    v.maxCoeff(&a);
    Eigen::VectorXd rest = v;
    rest[a] = -1;
    rest.maxCoeff(&b);
    throw FieldError(field(a), describe(param(a)) + " and " + describe(param(b)) + cannot +
                                   "they cannot tell them apart (relative singular value " +
                                   formatted("%.2g", s[s.size() - 1] / s[0]) + ")" + advice);
  }
  const Eigen::VectorXd variance =
      (J.transpose() * J).ldlt().solve(Eigen::MatrixXd::Identity(J.cols(), J.cols())).diagonal();
  for (int k = 0; k < p.parameters(); ++k) {
    const double limit = param(k).kind == CalibratedParameter::Kind::StringLength
                             ? kMaxStringStd_m
                             : kMaxMassScaleStd;
    const double sd = std::sqrt(std::max(0.0, variance[k]));
    if (!(sd <= limit))
      throw FieldError(
          field(k), describe(param(k)) + cannot + "its standard deviation would be " +
                        formatted("%.3g %s (at most %.3g)", sd, param(k).unit(), limit) + advice);
  }
}

double rms(const Eigen::VectorXd& v) {
  return v.size() ? std::sqrt(v.squaredNorm() / static_cast<double>(v.size())) : 0.0;
}
}  // namespace

void checkCalibrationOptions(const CalibrationOptions& o) {
  if (!(o.max_iterations >= 1 && o.max_iterations <= kMaxIterationsBound))
    throw FieldError("max_iterations", "must be in [1, " + std::to_string(kMaxIterationsBound) +
                                           "], got " + std::to_string(o.max_iterations));
  if (!(o.min_relative_singular_value > 0 && o.min_relative_singular_value < 1))
    throw FieldError("min_relative_singular_value",
                     "must be in (0, 1), got " + formatNumber(o.min_relative_singular_value));
  if (!(o.max_chi2_per_dof >= 1 && o.max_chi2_per_dof <= 1e6))
    throw FieldError("max_chi2_per_dof",
                     "must be in [1, 1e6], got " + formatNumber(o.max_chi2_per_dof));
}

ModelPtr withParameters(const Model& model, const std::vector<CalibratedParameter>& parameters,
                        const Eigen::VectorXd& values) {
  auto m = std::make_shared<Model>(model);
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    const CalibratedParameter& p = parameters[k];
    const double v = values[static_cast<Eigen::Index>(k)];
    if (p.kind == CalibratedParameter::Kind::StringLength) {
      m->strings[static_cast<std::size_t>(p.index)].length_m = v;
    } else {
      Mass& mass = m->masses[static_cast<std::size_t>(p.index)];
      const Mass& original = model.masses[static_cast<std::size_t>(p.index)];
      mass.mass_kg = original.mass_kg * v;
      mass.inertia_kgm2 = original.inertia_kgm2 * v;
    }
  }
  return m;
}

namespace {
// What a fit starts from: the problem, the poses' inputs, the nominal evaluation and its weighted
// Jacobian, every pose checked and what the poses cannot identify refused.
struct Start {
  std::unique_ptr<Problem> problem;
  std::vector<Eigen::VectorXd> rhos;
  Evaluation base;
  Eigen::MatrixXd J;
  long values = 0;
};

Start prepare(const ModelPtr& model, const MeasurementSpec& spec,
              const std::vector<CalibrationPose>& poses, const CalibrationOptions& options) {
  checkCalibrationOptions(options);
  Start st;
  st.problem = std::make_unique<Problem>(model, spec, parametersOf(*model, options), options.rest);
  Problem& problem = *st.problem;
  const int P = problem.parameters();
  if (poses.empty()) throw FieldError("poses", "no pose to calibrate from");
  for (std::size_t i = 0; i < poses.size(); ++i) {
    const CalibrationPose& c = poses[i];
    const bool stds = c.std.size() == 0 || (c.std.size() == problem.size() &&
                                            (c.std.array() > 0).all() && c.std.allFinite());
    if (c.rho.size() != model->nk() || c.y.size() != problem.size() || c.samples < 1 ||
        !c.rho.allFinite() || !c.y.allFinite() || !stds)
      throw FieldError("poses", formatted("pose %zu: needs %d finite inputs, %d finite measured "
                                          "values (and deviations > 0) and at least one sample",
                                          i, model->nk(), problem.size()));
    st.rhos.push_back(c.rho);
  }
  st.values = static_cast<long>(poses.size()) * problem.size();
  if (st.values <= P)
    throw FieldError("poses", formatted("%zu pose(s) give %ld measured values for %d parameters: "
                                        "hold more poses",
                                        poses.size(), st.values, P));
  st.base = problem.evaluate(problem.nominal(), st.rhos, &poses, nullptr);
  if (!st.base.failure.empty()) throw FieldError("poses", st.base.failure);
  std::string failure;
  st.J = problem.jacobian(problem.nominal(), st.base, st.rhos, &poses, failure);
  if (!failure.empty()) throw FieldError("poses", failure);
  checkIdentifiable(st.J, problem, options.min_relative_singular_value);
  return st;
}
}  // namespace

void checkCalibrationPoses(const ModelPtr& model, const MeasurementSpec& spec,
                           const std::vector<CalibrationPose>& poses,
                           const CalibrationOptions& options) {
  prepare(model, spec, poses, options);
}

Calibration calibrateAtRest(const ModelPtr& model, const MeasurementSpec& spec,
                            const std::vector<CalibrationPose>& poses,
                            const CalibrationOptions& options) {
  Start st = prepare(model, spec, poses, options);
  Problem& problem = *st.problem;
  const std::vector<Eigen::VectorXd>& rhos = st.rhos;
  const int P = problem.parameters();
  const long values = st.values;
  Eigen::VectorXd theta = problem.nominal();
  Evaluation base = std::move(st.base);
  Eigen::MatrixXd J = std::move(st.J);
  std::string failure;

  Calibration out;
  // The residuals in the measurements' units (m or rad), all poses stacked, and per pose.
  const int ny = problem.size();
  auto unweighted = [&](const Evaluation& e) {
    Eigen::VectorXd u(e.residual.size());
    for (std::size_t i = 0; i < poses.size(); ++i)
      u.segment(static_cast<Eigen::Index>(i) * ny, ny) =
          e.residual.segment(static_cast<Eigen::Index>(i) * ny, ny)
              .cwiseProduct(problem.meanStd(poses[i]));
    return u;
  };
  auto poseRms = [&](const Eigen::VectorXd& u) {
    std::vector<double> r;
    for (std::size_t i = 0; i < poses.size(); ++i)
      r.push_back(rms(u.segment(static_cast<Eigen::Index>(i) * ny, ny)));
    return r;
  };
  const Eigen::VectorXd nominal = unweighted(base);
  out.nominal_pose_rms_m = poseRms(nominal);
  out.nominal_rms_residual_m = rms(nominal);
  double cost = base.residual.squaredNorm();
  double lambda = 1e-3;
  for (int it = 0; it < options.max_iterations; ++it) {
    out.iterations = it + 1;
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * base.residual;
    bool accepted = false, last_trial_found = false;
    Eigen::VectorXd step;
    while (lambda < 1e12) {
      Eigen::MatrixXd damped = A;
      damped.diagonal() += lambda * A.diagonal();
      step = -damped.ldlt().solve(g);
      // A mass's scale stays positive (a step past zero is too long).
      bool positive = true;
      for (int k = 0; k < P; ++k)
        positive &= problem.params()[static_cast<std::size_t>(k)].kind !=
                        CalibratedParameter::Kind::MassScale ||
                    theta[k] + step[k] >= kMinMassScale;
      if (!positive) {
        lambda *= 10;
        continue;
      }
      const Evaluation trial = problem.evaluate(theta + step, rhos, &poses, &base.rest);
      last_trial_found = trial.failure.empty();
      if (last_trial_found && trial.residual.squaredNorm() < cost) {
        theta += step;
        base = trial;
        cost = base.residual.squaredNorm();
        lambda = std::max(lambda / 10, 1e-9);
        accepted = true;
        break;
      }
      lambda *= 10;
    }
    if (!accepted) {
      // No step lowers the cost: the minimum, to the rest poses' precision -- unless the last
      // steps found no rest pose to compare.
      out.converged = last_trial_found;
      break;
    }
    J = problem.jacobian(theta, base, rhos, &poses, failure);
    if (!failure.empty()) throw FieldError("poses", failure);
    const Eigen::VectorXd variance = A.ldlt().solve(Eigen::MatrixXd::Identity(P, P)).diagonal();
    if ((step.array().abs() <= 0.01 * variance.array().cwiseMax(0).sqrt()).all()) {
      out.converged = true;
      break;
    }
  }
  const long dof = values - P;
  out.chi2_per_dof = cost / static_cast<double>(dof);
  const Eigen::MatrixXd covariance =
      (J.transpose() * J).ldlt().solve(Eigen::MatrixXd::Identity(P, P)) *
      std::max(1.0, out.chi2_per_dof);
  out.parameters = problem.params();
  for (int k = 0; k < P; ++k) {
    out.parameters[static_cast<std::size_t>(k)].fitted = theta[k];
    out.parameters[static_cast<std::size_t>(k)].std = std::sqrt(std::max(0.0, covariance(k, k)));
  }
  out.model = withParameters(*model, out.parameters, theta);
  const Eigen::VectorXd fitted = unweighted(base);
  out.pose_rms_m = poseRms(fitted);
  for (const RestPose& r : base.rest) out.rest_q.push_back(r.q);
  out.rms_residual_m = rms(fitted);
  out.max_residual_m = fitted.size() ? fitted.cwiseAbs().maxCoeff() : 0.0;
  out.marker_misfit = problem.markerMisfit(base.residual);
  if (out.chi2_per_dof > options.max_chi2_per_dof) {
    std::string worst;
    for (std::size_t k = 0; k < std::min<std::size_t>(3, out.marker_misfit.size()); ++k)
      worst += formatted("%s%s %.3g", k ? ", " : "", out.marker_misfit[k].first.c_str(),
                         out.marker_misfit[k].second);
    throw FieldError(
        "fit", formatted("chi2/dof %.4g is more than the markers' noise explains (at most %g; "
                         "residual %.3g m rms, the model's own %.3g m): the worst markers, in "
                         "deviations rms: %s; are markers swapped or misnamed, the rig file "
                         "wrong, the puppet not at rest (settle longer), or far from its "
                         "model?",
                         out.chi2_per_dof, options.max_chi2_per_dof, out.rms_residual_m,
                         out.nominal_rms_residual_m, worst.c_str()));
  }
  return out;
}

std::vector<Eigen::VectorXd> chooseCalibrationPoses(
    const ModelPtr& model, const MeasurementSpec& spec, const Eigen::VectorXd& rho0, int count,
    const CalibrationOptions& options, double share,
    const std::function<bool(const Eigen::VectorXd& q)>& acceptable,
    const std::vector<char>& fixed) {
  checkCalibrationOptions(options);
  if (count < 1) throw FieldError("poses", "hold at least one pose");
  if (!fixed.empty() && static_cast<int>(fixed.size()) != model->nk())
    throw FieldError("held", formatted("%zu entries for %d inputs", fixed.size(), model->nk()));
  if (!(share > 0 && share <= 0.5))
    throw FieldError("share", "must be in (0, 0.5], got " + formatNumber(share));
  Problem problem(model, spec, parametersOf(*model, options), options.rest);
  const Model& m = *model;
  std::vector<Eigen::VectorXd> candidates{rho0};
  for (int j = 0; j < m.nk(); ++j) {
    const KinematicVariable& kv = m.kinematic[static_cast<std::size_t>(j)];
    if (!std::isfinite(kv.lower) || !std::isfinite(kv.upper)) continue;
    if (!fixed.empty() && fixed[static_cast<std::size_t>(j)]) continue;
    const double d = share * (kv.upper - kv.lower);
    for (double sign : {-1.0, 1.0}) {
      Eigen::VectorXd r = rho0;
      r[j] = std::min(std::max(rho0[j] + sign * d, kv.lower), kv.upper);
      if (std::abs(r[j] - rho0[j]) > 0.5 * d) candidates.push_back(r);
    }
  }
  // Each candidate's rows of the weighted Jacobian (unit samples), in typical sizes.
  const Eigen::VectorXd theta = problem.nominal();
  const Eigen::VectorXd sizes = problem.typicalSizes();
  std::vector<Eigen::VectorXd> usable;
  std::vector<Eigen::MatrixXd> rows;
  // Each candidate's rest pose followed from the start's (the rig goes there from the start).
  const Evaluation start = problem.evaluate(theta, {rho0}, nullptr, nullptr);
  if (!start.failure.empty())
    throw FieldError("poses", "the start's rest pose cannot be found: " + start.failure);
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    const std::vector<Eigen::VectorXd> one{candidates[c]};
    const Evaluation e = problem.evaluate(theta, one, nullptr, c ? &start.rest : nullptr);
    if (!e.failure.empty()) continue;
    if (acceptable && !acceptable(m.configuration(e.rest[0].q, candidates[c]))) continue;
    std::string failure;
    const Eigen::MatrixXd J = problem.jacobian(theta, e, one, nullptr, failure);
    if (!failure.empty()) continue;
    usable.push_back(candidates[c]);
    rows.push_back(problem.sigma().cwiseInverse().asDiagonal() * J * sizes.asDiagonal());
  }
  if (usable.empty() || usable.front() != rho0)
    throw FieldError("poses", "the start's rest pose cannot be found or is not acceptable");
  if (static_cast<int>(usable.size()) < count)
    throw FieldError("poses", formatted("only %zu usable poses near the start (asked for %d)",
                                        usable.size(), count));
  const int P = problem.parameters();
  Eigen::MatrixXd info = rows[0].transpose() * rows[0];
  const double ridge = 1e-9 * (1.0 + info.trace());
  std::vector<char> taken(usable.size(), 0);
  taken[0] = 1;
  std::vector<Eigen::VectorXd> chosen{rho0};
  auto logdet = [&](const Eigen::MatrixXd& a) {
    Eigen::LDLT<Eigen::MatrixXd> ldlt(a + ridge * Eigen::MatrixXd::Identity(P, P));
    return ldlt.vectorD().array().max(1e-300).log().sum();
  };
  while (static_cast<int>(chosen.size()) < count) {
    double best = -INFINITY;
    std::size_t pick = 0;
    for (std::size_t c = 1; c < usable.size(); ++c) {
      if (taken[c]) continue;
      const double v = logdet(info + rows[c].transpose() * rows[c]);
      if (v > best + 1e-12) {
        best = v;
        pick = c;
      }
    }
    taken[pick] = 1;
    info += rows[pick].transpose() * rows[pick];
    chosen.push_back(usable[pick]);
  }
  return chosen;
}

}  // namespace marionette::control
