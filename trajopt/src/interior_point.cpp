// SPDX-License-Identifier: BSD-3-Clause
// The constants are those of Wachter & Biegler (Math. Prog. 2006) and Ipopt's defaults.
#include "interior_point.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "kkt_system.hpp"
#include "marionette/common/clock.hpp"
#include "scaled_problem.hpp"

namespace marionette::detail {
namespace {

// Starting point: at least this far inside its bounds (absolute, relative to the interval).
constexpr double kBoundPush = 1e-2, kBoundFrac = 1e-2;
constexpr double kLargestInitialMultiplier = 1e3;
// Barrier parameter.
constexpr double kTauMin = 0.99;           // fraction to the boundary
constexpr double kSigmaSafeguard = 1e10;   // bound multipliers within this of mu / slack
constexpr double kOneSidedDamping = 1e-5;  // kappa_d: keeps a one-sided variable from drifting
constexpr double kMuMaxFactor = 1e3;       // mu <= this times the start's complementarity
constexpr double kMonotoneFactor = 0.8;    // the fixed mode's mu: this times the complementarity
constexpr double kInitialMonotoneMu = 0.1;
constexpr double kMuMin = 1e-11;
constexpr double kKappaEpsilon = 10.0, kKappaMu = 0.2, kThetaMu = 1.5;
constexpr double kScaleMax = 100.0;  // s_max of the optimality error's scaling
constexpr double kProgressMargin = 1e-5;
// Filter line search.
constexpr double kGammaTheta = 1e-5, kGammaPhi = 1e-8, kEta = 1e-4;
constexpr double kSTheta = 1.1, kSPhi = 2.3, kDelta = 1.0, kGammaAlpha = 0.05;
constexpr int kMaxSecondOrderCorrections = 4;
constexpr double kKappaSoc = 0.99;
// Inertia correction.
constexpr double kDeltaW0 = 1e-4, kDeltaWMin = 1e-20, kDeltaWMax = 1e40;
constexpr double kKappaWMinus = 1.0 / 3.0, kKappaWPlus = 8.0, kKappaWPlusFirst = 100.0;
constexpr double kDeltaCBar = 1e-8, kKappaC = 0.25;

// Pushes v inside its bounds (Ipopt's bound_push and bound_frac).
void pushInside(const Bounds& b, Eigen::VectorXd& v) {
  for (int i = 0; i < b.size(); ++i) {
    const bool lo = b.has_lower[i], up = b.has_upper[i];
    if (lo && up) {
      const double p = std::min(kBoundPush * std::max(1.0, std::abs(b.lower[i])),
                                kBoundFrac * (b.upper[i] - b.lower[i]));
      const double q = std::min(kBoundPush * std::max(1.0, std::abs(b.upper[i])),
                                kBoundFrac * (b.upper[i] - b.lower[i]));
      v[i] = std::min(std::max(v[i], b.lower[i] + p), b.upper[i] - q);
    } else if (lo) {
      v[i] = std::max(v[i], b.lower[i] + kBoundPush * std::max(1.0, std::abs(b.lower[i])));
    } else if (up) {
      v[i] = std::min(v[i], b.upper[i] - kBoundPush * std::max(1.0, std::abs(b.upper[i])));
    }
  }
}

// The largest step in (0, 1] that keeps v + alpha dv at least 1 - tau of its slack from every
// bound.
double fractionToBoundary(const Bounds& b, const Eigen::VectorXd& v, const Eigen::VectorXd& dv,
                          double tau) {
  double alpha = 1.0;
  for (int i = 0; i < b.size(); ++i) {
    if (b.has_lower[i] && dv[i] < 0) alpha = std::min(alpha, -tau * (v[i] - b.lower[i]) / dv[i]);
    if (b.has_upper[i] && dv[i] > 0) alpha = std::min(alpha, tau * (b.upper[i] - v[i]) / dv[i]);
  }
  return alpha;
}

// The same for nonnegative duals (entries without their bound are zero and stay so).
double dualFractionToBoundary(const Eigen::VectorXd& z, const Eigen::VectorXd& dz, double tau) {
  double alpha = 1.0;
  for (Eigen::Index i = 0; i < z.size(); ++i)
    if (dz[i] < 0 && z[i] > 0) alpha = std::min(alpha, -tau * z[i] / dz[i]);
  return alpha;
}

// An iterate, or a step of one: primal x and slacks s, the rows' multipliers, the bounds'.
struct Iterate {
  Eigen::VectorXd x, s, yc, yd, zl, zu, vl, vu;
};
using Step = Iterate;

class Solver {
 public:
  Solver(SparseNlp& nlp, const InteriorPointOptions& options, const KeepGoing& keep_going)
      : problem_(nlp),
        kkt_(problem_.stages(), problem_.equalities(), problem_.inequalities(),
             problem_.equalityJacobian(), problem_.inequalityJacobian(), problem_.hessianEntries()),
        options_(options),
        keep_going_(keep_going) {}

  InteriorPointResult run(const Eigen::VectorXd& start);

 private:
  const Bounds& xb() const { return problem_.variableBounds(); }
  const Bounds& sb() const { return problem_.slackBounds(); }
  int boundCount() const { return xb().count() + sb().count(); }

  bool evaluateAt(const Eigen::VectorXd& x, bool derivatives) {
    ++result_.evaluations;
    evaluated_x_ = x;
    evaluated_derivatives_ = derivatives;
    const auto t0 = SteadyClock::now();
    const bool ok = problem_.evaluate(x, derivatives);
    result_.evaluation_s += secondsSince(t0);
    return ok;
  }
  // The current point's values, kept while trials overwrite the problem's.
  void keepCurrent() {
    f_ = problem_.f();
    grad_ = problem_.gradient();
    c_ = problem_.c();
    d_ = problem_.d();
    violation_ = problem_.unscaledViolation();
  }

  // Sigma of one bounded vector (z / slack on each side).
  Eigen::VectorXd sigma(const Bounds& b, const Eigen::VectorXd& v, const Eigen::VectorXd& zl,
                        const Eigen::VectorXd& zu) const {
    Eigen::VectorXd out = Eigen::VectorXd::Zero(b.size());
    for (int i = 0; i < b.size(); ++i) {
      if (b.has_lower[i]) out[i] += zl[i] / (v[i] - b.lower[i]);
      if (b.has_upper[i]) out[i] += zu[i] / (b.upper[i] - v[i]);
    }
    return out;
  }
  // The barrier terms' gradient at mu.
  Eigen::VectorXd barrierGradient(const Bounds& b, const Eigen::VectorXd& v, double mu) const {
    Eigen::VectorXd out = Eigen::VectorXd::Zero(b.size());
    for (int i = 0; i < b.size(); ++i) {
      const bool lo = b.has_lower[i], up = b.has_upper[i];
      if (lo) out[i] -= mu / (v[i] - b.lower[i]);
      if (up) out[i] += mu / (b.upper[i] - v[i]);
      if (lo && !up) out[i] += kOneSidedDamping * mu;
      if (up && !lo) out[i] -= kOneSidedDamping * mu;
    }
    return out;
  }
  double barrierTerms(const Bounds& b, const Eigen::VectorXd& v, double mu) const {
    double out = 0.0;
    for (int i = 0; i < b.size(); ++i) {
      const bool lo = b.has_lower[i], up = b.has_upper[i];
      if (lo) out -= mu * std::log(v[i] - b.lower[i]);
      if (up) out -= mu * std::log(b.upper[i] - v[i]);
      if (lo && !up) out += kOneSidedDamping * mu * (v[i] - b.lower[i]);
      if (up && !lo) out += kOneSidedDamping * mu * (b.upper[i] - v[i]);
    }
    return out;
  }
  double barrierObjective(double f, const Eigen::VectorXd& x, const Eigen::VectorXd& s,
                          double mu) const {
    return f + barrierTerms(xb(), x, mu) + barrierTerms(sb(), s, mu);
  }
  double theta(const Eigen::VectorXd& c, const Eigen::VectorXd& d, const Eigen::VectorXd& s) const {
    return c.lpNorm<1>() + (d - s).lpNorm<1>();
  }
  // Sum of the complementarity products (less mu each), their largest, and how many.
  void complementarity(double mu, double& sum, double& largest) const;
  double averageComplementarity() const {
    double sum = 0, largest = 0;
    complementarity(0.0, sum, largest);
    return boundCount() > 0 ? sum / boundCount() : 0.0;
  }
  // The optimality error at mu (scaled, Ipopt's E_mu), and whether the unscaled tests pass.
  double optimalityError(double mu, bool* unscaled_converged) const;

  // Factorizes the Newton matrix at the current iterate with the Hessian `hessian`, regularized
  // until its inertia is right.  False if no regularization gives it.
  bool factorize(const double* hessian, double mu);
  // The Newton step for the residuals (r_x, r_s, r_c, r_d) with the current factorization.
  void step(const Eigen::VectorXd& rx, const Eigen::VectorXd& rs, const Eigen::VectorXd& rc,
            const Eigen::VectorXd& rd, Step& out) const;
  // Completes a step's bound multipliers for barrier mu.
  void boundSteps(double mu, Step& out) const;
  // The barrier problem's Newton step at mu.
  void newtonStep(double mu, Step& out) const;
  void leastSquaresMultipliers();
  // Mehrotra's probing: mu from the affine step's complementarity.
  double probingMu() const;

  // The filter line search along `dir` at mu; on success the iterate has moved.
  bool lineSearch(const Step& dir, double mu, double tau);
  bool acceptable(double theta_trial, double phi_trial, double theta_now, double phi_now,
                  double slope, double alpha, bool& f_type) const;
  bool inFilter(double theta, double phi) const {
    for (const auto& entry : filter_)
      if (theta >= entry.first && phi >= entry.second) return true;
    return false;
  }
  void acceptDuals(const Step& dir, double alpha, double mu, double tau);

  ScaledProblem problem_;
  KktSystem kkt_;
  InteriorPointOptions options_;
  const KeepGoing& keep_going_;
  mutable InteriorPointResult result_;  // (its counts and timings kept by const steps too)
  Iterate it_;
  double f_ = 0.0, violation_ = 0.0;
  Eigen::VectorXd grad_, c_, d_;
  const double* hessian_ = nullptr;
  // The factorization's regularization and the slacks' condensed weights.
  double delta_w_ = 0.0, delta_c_ = 0.0, last_delta_w_ = 0.0;
  bool rows_dependent_ = false;  // delta_c was needed
  Eigen::VectorXd sigma_x_, sigma_s_, weight_;
  double theta_max_ = 0.0, theta_min_ = 0.0;
  std::vector<std::pair<double, double>> filter_;    // (theta, phi) of the line search
  std::vector<std::pair<double, double>> progress_;  // (theta, f): the free mode's
  Eigen::VectorXd evaluated_x_;  // the point the problem last evaluated, and how
  bool evaluated_derivatives_ = false;
};

void Solver::complementarity(double mu, double& sum, double& largest) const {
  sum = 0.0;
  largest = 0.0;
  auto add = [&](const Bounds& b, const Eigen::VectorXd& v, const Eigen::VectorXd& zl,
                 const Eigen::VectorXd& zu) {
    for (int i = 0; i < b.size(); ++i) {
      if (b.has_lower[i]) {
        const double p = (v[i] - b.lower[i]) * zl[i];
        sum += p;
        largest = std::max(largest, std::abs(p - mu));
      }
      if (b.has_upper[i]) {
        const double p = (b.upper[i] - v[i]) * zu[i];
        sum += p;
        largest = std::max(largest, std::abs(p - mu));
      }
    }
  };
  add(xb(), it_.x, it_.zl, it_.zu);
  add(sb(), it_.s, it_.vl, it_.vu);
}

double Solver::optimalityError(double mu, bool* unscaled_converged) const {
  const Eigen::VectorXd dual_x =
      grad_ + problem_.transposedProduct(it_.yc, it_.yd) - it_.zl + it_.zu;
  const Eigen::VectorXd dual_s = -it_.yd - it_.vl + it_.vu;
  const double dual = std::max(dual_x.lpNorm<Eigen::Infinity>(), dual_s.lpNorm<Eigen::Infinity>());
  const double primal = std::max(c_.lpNorm<Eigen::Infinity>(), (d_ - it_.s).lpNorm<Eigen::Infinity>());
  double sum = 0, largest = 0;
  complementarity(mu, sum, largest);
  const int bounds = boundCount(), rows = problem_.equalities() + problem_.inequalities();
  const double multipliers = it_.yc.lpNorm<1>() + it_.yd.lpNorm<1>() + it_.zl.lpNorm<1>() +
                             it_.zu.lpNorm<1>() + it_.vl.lpNorm<1>() + it_.vu.lpNorm<1>();
  const double bound_multipliers =
      it_.zl.lpNorm<1>() + it_.zu.lpNorm<1>() + it_.vl.lpNorm<1>() + it_.vu.lpNorm<1>();
  const double s_d =
      std::max(kScaleMax, rows + bounds > 0 ? multipliers / (rows + bounds) : 0.0) / kScaleMax;
  const double s_c = std::max(kScaleMax, bounds > 0 ? bound_multipliers / bounds : 0.0) / kScaleMax;
  if (unscaled_converged) {
    const double fs = problem_.objectiveScale();
    *unscaled_converged = violation_ <= options_.constraint_tolerance &&
                          largest / fs <= options_.complementarity_tolerance &&
                          dual / fs <= options_.dual_tolerance;
  }
  return std::max({dual / s_d, primal, largest / s_c});
}

bool Solver::factorize(const double* hessian, double mu) {
  const Eigen::VectorXd base_x = sigma(xb(), it_.x, it_.zl, it_.zu);
  const Eigen::VectorXd base_s = sigma(sb(), it_.s, it_.vl, it_.vu);
  // At a fixed delta_c the matrix grows with delta_w in the Loewner order (delta_w I, and the
  // inequality rows' weights sigma / (1 + delta_c sigma) increase with sigma = sigma_s +
  // delta_w), so by Weyl's inequality a smaller delta_w has no more positive eigenvalues: below a
  // delta_w whose factorization had too few, at the same delta_c, none is tried.
  double hopeless_w = -1.0, hopeless_c = -1.0;
  auto attempt = [&](double dw, double dc) {
    if (dc == hopeless_c && dw <= hopeless_w) return false;
    delta_w_ = dw;
    delta_c_ = dc;
    sigma_x_ = base_x;
    sigma_s_ = base_s.array() + dw;
    weight_ = sigma_s_.array() / (1.0 + dc * sigma_s_.array());
    ++result_.factorizations;
    const auto t0 = SteadyClock::now();
    kkt_.factorize(hessian, problem_.jacobian(), sigma_x_, weight_, dw, dc);
    result_.factorization_s += secondsSince(t0);
    if (kkt_.inertiaIsCorrect()) return true;
    // (An attempt that got here is past the last hopeless delta_w or at another delta_c.)
    if (!kkt_.singular() && kkt_.inertia().positive < kkt_.variables())
      hopeless_w = dw, hopeless_c = dc;
    return false;
  };
  // Rows found dependent at the last factorization are regularized from the first attempt on
  // (Ipopt's degenerate Jacobian), saving a factorization an iteration.
  const double dc_mu = kDeltaCBar * std::pow(std::max(mu, 1e-300), kKappaC);
  // A Hessian that needed delta_w last time most likely needs it now: a third of it is tried
  // first (one factorization instead of two), then the full procedure.
  if (last_delta_w_ > 0.0 &&
      attempt(std::max(kDeltaWMin, kKappaWMinus * last_delta_w_), rows_dependent_ ? dc_mu : 0.0)) {
    last_delta_w_ = delta_w_ > kDeltaWMin ? delta_w_ : 0.0;
    return true;
  }
  if (!rows_dependent_ && attempt(0.0, 0.0)) {
    last_delta_w_ = 0.0;
    return true;
  }
  double dc = 0.0;
  if (rows_dependent_ || kkt_.singular() || kkt_.inertia().negative < kkt_.equalities()) {
    rows_dependent_ = true;
    dc = dc_mu;
    if (attempt(0.0, dc)) return true;
  }
  double dw = last_delta_w_ == 0.0 ? kDeltaW0 : std::max(kDeltaWMin, kKappaWMinus * last_delta_w_);
  while (dw <= kDeltaWMax) {
    if (attempt(dw, dc)) {
      last_delta_w_ = dw;
      return true;
    }
    dw *= last_delta_w_ == 0.0 ? kKappaWPlusFirst : kKappaWPlus;
  }
  return false;
}

void Solver::step(const Eigen::VectorXd& rx, const Eigen::VectorXd& rs, const Eigen::VectorXd& rc,
                  const Eigen::VectorXd& rd, Step& out) const {
  // The inequality rows condensed: dy_d = D (J_d dx + r_d + r_s / sigma_s).
  Eigen::VectorXd pushed(rd.size());
  for (Eigen::Index k = 0; k < rd.size(); ++k)
    pushed[k] = weight_[k] * rd[k] + rs[k] / (1.0 + delta_c_ * sigma_s_[k]);
  out.x = -rx - problem_.transposedProduct(Eigen::VectorXd::Zero(rc.size()), pushed);
  out.yc = -rc;
  const auto t0 = SteadyClock::now();
  kkt_.solve(out.x, out.yc);
  result_.solve_s += secondsSince(t0);
  ++result_.solves;
  const Eigen::VectorXd jdx = problem_.inequalityProduct(out.x);
  out.yd = weight_.cwiseProduct(jdx) + pushed;
  out.s = jdx + rd - delta_c_ * out.yd;
}

void Solver::boundSteps(double mu, Step& out) const {
  auto duals = [&](const Bounds& b, const Eigen::VectorXd& v, const Eigen::VectorXd& dv,
                   const Eigen::VectorXd& zl, const Eigen::VectorXd& zu, Eigen::VectorXd& dzl,
                   Eigen::VectorXd& dzu) {
    dzl.setZero(b.size());
    dzu.setZero(b.size());
    for (int i = 0; i < b.size(); ++i) {
      if (b.has_lower[i]) {
        const double slack = v[i] - b.lower[i];
        dzl[i] = (mu - zl[i] * dv[i]) / slack - zl[i];
      }
      if (b.has_upper[i]) {
        const double slack = b.upper[i] - v[i];
        dzu[i] = (mu + zu[i] * dv[i]) / slack - zu[i];
      }
    }
  };
  duals(xb(), it_.x, out.x, it_.zl, it_.zu, out.zl, out.zu);
  duals(sb(), it_.s, out.s, it_.vl, it_.vu, out.vl, out.vu);
}

void Solver::newtonStep(double mu, Step& out) const {
  const Eigen::VectorXd rx =
      grad_ + problem_.transposedProduct(it_.yc, it_.yd) + barrierGradient(xb(), it_.x, mu);
  const Eigen::VectorXd rs = -it_.yd + barrierGradient(sb(), it_.s, mu);
  step(rx, rs, c_, d_ - it_.s, out);
  boundSteps(mu, out);
}

void Solver::leastSquaresMultipliers() {
  it_.yc.setZero(problem_.equalities());
  it_.yd.setZero(problem_.inequalities());
  if (problem_.equalities() + problem_.inequalities() == 0) return;
  // min |grad f + J^T y - z|^2: the Newton matrix with W = 0 and Sigma = I.
  sigma_x_ = Eigen::VectorXd::Ones(problem_.variables());
  sigma_s_ = Eigen::VectorXd::Ones(problem_.inequalities());
  weight_ = sigma_s_;
  delta_w_ = delta_c_ = 0.0;
  ++result_.factorizations;
  kkt_.factorize(problem_.zeroHessian(), problem_.jacobian(), sigma_x_, weight_, 0.0, 0.0);
  if (!kkt_.inertiaIsCorrect()) return;
  Step ls;
  step(grad_ - it_.zl + it_.zu, -it_.vl + it_.vu, Eigen::VectorXd::Zero(problem_.equalities()),
       Eigen::VectorXd::Zero(problem_.inequalities()), ls);
  const double largest = std::max(ls.yc.lpNorm<Eigen::Infinity>(), ls.yd.lpNorm<Eigen::Infinity>());
  if (!(largest <= kLargestInitialMultiplier)) return;
  it_.yc = ls.yc;
  it_.yd = ls.yd;
}

double Solver::probingMu() const {
  Step affine;
  newtonStep(0.0, affine);
  const double alpha_p = std::min(fractionToBoundary(xb(), it_.x, affine.x, 1.0),
                                  fractionToBoundary(sb(), it_.s, affine.s, 1.0));
  const double alpha_d = std::min({dualFractionToBoundary(it_.zl, affine.zl, 1.0),
                                   dualFractionToBoundary(it_.zu, affine.zu, 1.0),
                                   dualFractionToBoundary(it_.vl, affine.vl, 1.0),
                                   dualFractionToBoundary(it_.vu, affine.vu, 1.0)});
  double sum = 0.0;
  auto add = [&](const Bounds& b, const Eigen::VectorXd& v, const Eigen::VectorXd& dv,
                 const Eigen::VectorXd& zl, const Eigen::VectorXd& dzl, const Eigen::VectorXd& zu,
                 const Eigen::VectorXd& dzu) {
    for (int i = 0; i < b.size(); ++i) {
      if (b.has_lower[i])
        sum += (v[i] + alpha_p * dv[i] - b.lower[i]) * (zl[i] + alpha_d * dzl[i]);
      if (b.has_upper[i])
        sum += (b.upper[i] - v[i] - alpha_p * dv[i]) * (zu[i] + alpha_d * dzu[i]);
    }
  };
  add(xb(), it_.x, affine.x, it_.zl, affine.zl, it_.zu, affine.zu);
  add(sb(), it_.s, affine.s, it_.vl, affine.vl, it_.vu, affine.vu);
  const double average = averageComplementarity();
  if (!(average > 0)) return 0.0;
  const double affine_average = sum / boundCount();
  const double centering = std::pow(std::max(0.0, affine_average) / average, 3.0);
  return std::min(centering, 1.0) * average;
}

bool Solver::acceptable(double theta_trial, double phi_trial, double theta_now, double phi_now,
                        double slope, double alpha, bool& f_type) const {
  f_type = false;
  if (!std::isfinite(phi_trial) || !(theta_trial <= theta_max_)) return false;
  if (inFilter(theta_trial, phi_trial)) return false;
  const bool switching =
      slope < 0 && alpha * std::pow(-slope, kSPhi) > kDelta * std::pow(theta_now, kSTheta);
  if (switching && theta_now <= theta_min_) {
    f_type = phi_trial <= phi_now + kEta * alpha * slope;
    return f_type;
  }
  return theta_trial <= (1 - kGammaTheta) * theta_now ||
         phi_trial <= phi_now - kGammaPhi * theta_now;
}

void Solver::acceptDuals(const Step& dir, double alpha, double mu, double tau) {
  const double alpha_d = std::min({dualFractionToBoundary(it_.zl, dir.zl, tau),
                                   dualFractionToBoundary(it_.zu, dir.zu, tau),
                                   dualFractionToBoundary(it_.vl, dir.vl, tau),
                                   dualFractionToBoundary(it_.vu, dir.vu, tau)});
  it_.yc += alpha * dir.yc;
  it_.yd += alpha * dir.yd;
  it_.zl += alpha_d * dir.zl;
  it_.zu += alpha_d * dir.zu;
  it_.vl += alpha_d * dir.vl;
  it_.vu += alpha_d * dir.vu;
  // Each bound multiplier within a factor kSigmaSafeguard of mu / its slack.
  auto safeguard = [&](const Bounds& b, const Eigen::VectorXd& v, Eigen::VectorXd& zl,
                       Eigen::VectorXd& zu) {
    for (int i = 0; i < b.size(); ++i) {
      if (b.has_lower[i]) {
        const double slack = v[i] - b.lower[i];
        zl[i] = std::max(std::min(zl[i], kSigmaSafeguard * mu / slack),
                         mu / (kSigmaSafeguard * slack));
      }
      if (b.has_upper[i]) {
        const double slack = b.upper[i] - v[i];
        zu[i] = std::max(std::min(zu[i], kSigmaSafeguard * mu / slack),
                         mu / (kSigmaSafeguard * slack));
      }
    }
  };
  safeguard(xb(), it_.x, it_.zl, it_.zu);
  safeguard(sb(), it_.s, it_.vl, it_.vu);
}

bool Solver::lineSearch(const Step& dir, double mu, double tau) {
  const double theta_now = theta(c_, d_, it_.s);
  const double phi_now = barrierObjective(f_, it_.x, it_.s, mu);
  const double slope = (grad_ + barrierGradient(xb(), it_.x, mu)).dot(dir.x) +
                       barrierGradient(sb(), it_.s, mu).dot(dir.s);
  const double alpha_max =
      std::min(fractionToBoundary(xb(), it_.x, dir.x, tau), fractionToBoundary(sb(), it_.s, dir.s, tau));
  double alpha_min = kGammaTheta;
  if (slope < 0) {
    alpha_min = std::min(kGammaTheta, kGammaPhi * theta_now / -slope);
    if (theta_now <= theta_min_)
      alpha_min = std::min(alpha_min, kDelta * std::pow(theta_now, kSTheta) / std::pow(-slope, kSPhi));
  }
  alpha_min *= kGammaAlpha;

  auto accept = [&](const Eigen::VectorXd& x, const Eigen::VectorXd& s, double alpha,
                    bool f_type, const Step& duals) {
    if (!f_type) filter_.emplace_back((1 - kGammaTheta) * theta_now, phi_now - kGammaPhi * theta_now);
    it_.x = x;
    it_.s = s;
    acceptDuals(duals, alpha, mu, tau);
    return true;
  };
  for (double alpha = alpha_max; alpha >= alpha_min; alpha *= 0.5) {
    const Eigen::VectorXd x = it_.x + alpha * dir.x, s = it_.s + alpha * dir.s;
    const bool first = alpha == alpha_max;
    if (!evaluateAt(x, first)) continue;
    const double theta_trial = theta(problem_.c(), problem_.d(), s);
    const double phi_trial = barrierObjective(problem_.f(), x, s, mu);
    bool f_type = false;
    if (acceptable(theta_trial, phi_trial, theta_now, phi_now, slope, alpha, f_type))
      return accept(x, s, alpha, f_type, dir);
    if (!first || theta_trial < theta_now) continue;
    // Second-order corrections: the rows' values at the trial added to the step's right-hand
    // side, up to kMaxSecondOrderCorrections times while they keep reducing the violation.
    Eigen::VectorXd soc_c = alpha * c_ + problem_.c();
    Eigen::VectorXd soc_d = alpha * (d_ - it_.s) + (problem_.d() - s);
    double theta_old = theta_trial;
    const Eigen::VectorXd rx =
        grad_ + problem_.transposedProduct(it_.yc, it_.yd) + barrierGradient(xb(), it_.x, mu);
    const Eigen::VectorXd rs = -it_.yd + barrierGradient(sb(), it_.s, mu);
    for (int p = 0; p < kMaxSecondOrderCorrections; ++p) {
      Step corrected;
      step(rx, rs, soc_c, soc_d, corrected);
      const double alpha_soc = std::min(fractionToBoundary(xb(), it_.x, corrected.x, tau),
                                        fractionToBoundary(sb(), it_.s, corrected.s, tau));
      const Eigen::VectorXd xs = it_.x + alpha_soc * corrected.x,
                            ss = it_.s + alpha_soc * corrected.s;
      if (!evaluateAt(xs, true)) break;
      const double theta_soc = theta(problem_.c(), problem_.d(), ss);
      const double phi_soc = barrierObjective(problem_.f(), xs, ss, mu);
      if (acceptable(theta_soc, phi_soc, theta_now, phi_now, slope, alpha, f_type)) {
        boundSteps(mu, corrected);
        return accept(xs, ss, alpha_soc, f_type, corrected);
      }
      if (theta_soc > kKappaSoc * theta_old) break;
      theta_old = theta_soc;
      soc_c = alpha_soc * soc_c + problem_.c();
      soc_d = alpha_soc * soc_d + (problem_.d() - ss);
    }
  }
  return false;
}

InteriorPointResult Solver::run(const Eigen::VectorXd& start) {
  it_.x = problem_.scaledFrom(start);
  pushInside(xb(), it_.x);
  if (!evaluateAt(it_.x, true)) {
    result_.status = InteriorPointStatus::kEvaluationFailed;
    result_.z = start;
    return result_;
  }
  keepCurrent();
  it_.s = d_;
  pushInside(sb(), it_.s);
  auto ones = [](const std::vector<char>& has) {
    Eigen::VectorXd v(static_cast<Eigen::Index>(has.size()));
    for (std::size_t i = 0; i < has.size(); ++i) v[i] = has[i] ? 1.0 : 0.0;
    return v;
  };
  it_.zl = ones(xb().has_lower);
  it_.zu = ones(xb().has_upper);
  it_.vl = ones(sb().has_lower);
  it_.vu = ones(sb().has_upper);
  leastSquaresMultipliers();

  const double theta0 = theta(c_, d_, it_.s);
  theta_max_ = 1e4 * std::max(1.0, theta0);
  theta_min_ = 1e-4 * std::max(1.0, theta0);
  const double mu_min = std::min(kMuMin, 0.5 * std::min(options_.tolerance,
                                                       problem_.objectiveScale() *
                                                           options_.complementarity_tolerance));
  const double mu_max = std::max(kMuMaxFactor * averageComplementarity(), mu_min);
  bool free_mode = options_.adaptive_barrier && boundCount() > 0;
  double mu = free_mode ? averageComplementarity() : kInitialMonotoneMu;
  double tau = std::max(kTauMin, 1.0 - mu);

  auto finish = [&](InteriorPointStatus status) {
    result_.status = status;
    result_.z = problem_.pointOf(it_.x);
    result_.lambda = problem_.rowMultipliers(it_.yc, it_.yd);
    result_.objective = f_ / problem_.objectiveScale();
    result_.primal_infeasibility = violation_;
    result_.factorizations += kkt_.pivotedRefactorizations();
    return result_;
  };

  for (int iteration = 0;; ++iteration) {
    result_.iterations = iteration;
    bool unscaled_converged = false;
    const double error = optimalityError(0.0, &unscaled_converged);
    if (keep_going_) {
      const Eigen::VectorXd point = problem_.pointOf(it_.x);
      if (!keep_going_({iteration, f_ / problem_.objectiveScale(), violation_, mu, false, &point}))
        return finish(InteriorPointStatus::kStopped);
    }
    if (error <= options_.tolerance && unscaled_converged)
      return finish(InteriorPointStatus::kConverged);
    if (iteration >= options_.max_iterations) return finish(InteriorPointStatus::kIterationLimit);

    const double theta_now = theta(c_, d_, it_.s);
    auto sufficientProgress = [&] {
      const double margin = kProgressMargin * std::min(1.0, error);
      for (const auto& entry : progress_)
        if (theta_now + margin >= entry.first && f_ + margin >= entry.second) return false;
      return true;
    };
    if (free_mode && !progress_.empty() && !sufficientProgress()) {
      free_mode = false;
      mu = std::min(std::max(kMonotoneFactor * averageComplementarity(), mu_min), mu_max);
      tau = std::max(kTauMin, 1.0 - mu);
      filter_.clear();
    } else if (!free_mode && options_.adaptive_barrier && boundCount() > 0 && !progress_.empty() &&
               sufficientProgress()) {
      free_mode = true;
    }
    if (free_mode) {
      progress_.emplace_back(theta_now, f_);
    } else {
      // The monotone rule: mu decreased while the barrier problem is solved to kKappaEpsilon mu.
      while (mu > mu_min && optimalityError(mu, nullptr) <= kKappaEpsilon * mu) {
        mu = std::max(mu_min, std::min(kKappaMu * mu, std::pow(mu, kThetaMu)));
        tau = std::max(kTauMin, 1.0 - mu);
        filter_.clear();
      }
    }

    const auto hessian_t0 = SteadyClock::now();
    hessian_ = problem_.hessian(1.0, it_.yc, it_.yd);
    result_.evaluation_s += secondsSince(hessian_t0);
    if (!factorize(hessian_, mu)) return finish(InteriorPointStatus::kNumericalTrouble);
    if (free_mode) {
      mu = std::min(std::max(probingMu(), mu_min), mu_max);
      tau = std::max(kTauMin, 1.0 - error);
      filter_.clear();
    }
    Step dir;
    newtonStep(mu, dir);
    bool moved = lineSearch(dir, mu, tau);
    if (!moved && free_mode) {
      // No progress at the free mode's mu: the monotone mode from here.
      free_mode = false;
      mu = std::min(std::max(kMonotoneFactor * averageComplementarity(), mu_min), mu_max);
      tau = std::max(kTauMin, 1.0 - mu);
      filter_.clear();
      newtonStep(mu, dir);
      moved = lineSearch(dir, mu, tau);
    }
    if (!moved) {
      evaluateAt(it_.x, true);
      return finish(InteriorPointStatus::kLineSearchFailed);
    }
    if (!(evaluated_derivatives_ && evaluated_x_ == it_.x) && !evaluateAt(it_.x, true))
      return finish(InteriorPointStatus::kEvaluationFailed);
    keepCurrent();
  }
}

}  // namespace

std::string describe(InteriorPointStatus status) {
  switch (status) {
    case InteriorPointStatus::kConverged: return "converged";
    case InteriorPointStatus::kIterationLimit: return "out of iterations";
    case InteriorPointStatus::kStopped: return "stopped";
    case InteriorPointStatus::kLineSearchFailed: return "no acceptable step";
    case InteriorPointStatus::kEvaluationFailed: return "the problem could not be evaluated";
    case InteriorPointStatus::kNumericalTrouble: return "no factorization with the right inertia";
  }
  return "unknown";
}

InteriorPointResult solveInteriorPoint(SparseNlp& nlp, const Eigen::VectorXd& start,
                                       const InteriorPointOptions& options,
                                       const KeepGoing& keep_going) {
  Solver solver(nlp, options, keep_going);
  return solver.run(start);
}

}  // namespace marionette::detail
