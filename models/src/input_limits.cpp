// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/input_limits.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace marionette {

std::string LimitViolation::describe() const {
  std::ostringstream os;
  os << variable << " at sample " << sample << ": " << limit << ' ' << value
     << (limit == "range" ? " outside the range (bound " : " > ") << bound
     << (limit == "range" ? ")" : "");
  return os.str();
}

double rangeTolerance(double lower, double upper, double rel_tol) {
  return rel_tol * std::max({1.0, std::abs(lower), std::abs(upper)});
}

std::vector<LimitViolation> checkInputLimits(const Model& model, const Eigen::MatrixXd& samples,
                                             double rate_hz, double rel_tol, int first_checked) {
  if (samples.cols() != model.nk())
    throw std::invalid_argument("input samples have " + std::to_string(samples.cols()) +
                                " columns; '" + model.name + "' has " + std::to_string(model.nk()) +
                                " inputs");
  if (!(rate_hz > 0.0)) throw std::invalid_argument("rate must be > 0 Hz");
  const double h = 1.0 / rate_hz;
  const int n = static_cast<int>(samples.rows());
  const int first = std::clamp(first_checked, 0, n);
  std::vector<LimitViolation> out;
  for (int j = 0; j < model.nk(); ++j) {
    const KinematicVariable& kv = model.kinematic[j];
    // Rounding of the values themselves (e.g. printed to 12 digits) enters the differences
    // divided by h and h^2.
    double scale = 1e-300;
    for (int i = 0; i < n; ++i) scale = std::max(scale, std::abs(samples(i, j)));
    const double eps = 1e-11 * std::max(1.0, scale);
    LimitViolation worst[3];
    double excess[3] = {0.0, 0.0, 0.0};
    auto note = [&](int which, int i, const char* what, double value, double bound, double over) {
      if (over > excess[which]) {
        excess[which] = over;
        worst[which] = {kv.name, i, what, value, bound};
      }
    };
    auto at = [&](int i) { return samples(std::clamp(i, 0, n - 1), j); };  // held before/after
    for (int i = first; i < n; ++i) {
      const double x = samples(i, j);
      if (!std::isfinite(x)) {
        note(0, i, "range", x, kv.lower, std::numeric_limits<double>::infinity());
        continue;
      }
      const double tol_r = rangeTolerance(kv, rel_tol);
      if (x < kv.lower - tol_r - eps) note(0, i, "range", x, kv.lower, kv.lower - x);
      if (x > kv.upper + tol_r + eps) note(0, i, "range", x, kv.upper, x - kv.upper);
    }
    for (int i = first; i <= n; ++i) {  // speed between samples i-1 and i (held outside)
      const double v = std::abs(at(i) - at(i - 1)) / h;
      const double bound = kv.max_speed * (1.0 + rel_tol) + 2 * eps / h;
      if (v > bound) note(1, std::min(i, n - 1), "speed", v, kv.max_speed, v - bound);
    }
    for (int i = first; i < n; ++i) {  // acceleration at sample i
      const double a = std::abs(at(i + 1) - 2 * at(i) + at(i - 1)) / (h * h);
      const double bound = kv.max_accel * (1.0 + rel_tol) + 4 * eps / (h * h);
      if (a > bound) note(2, i, "acceleration", a, kv.max_accel, a - bound);
    }
    for (int w = 0; w < 3; ++w)
      if (excess[w] > 0.0) out.push_back(worst[w]);
  }
  return out;
}

}  // namespace marionette
