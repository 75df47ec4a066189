// SPDX-License-Identifier: BSD-3-Clause
#include "input_spline.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::detail {

namespace {
// Uniform cubic B-spline weights on P_{i-1}, P_i, P_{i+1}, P_{i+2} at w in [0, 1].
void cubicWeights(double w, double out[4]) {
  const double w2 = w * w, w3 = w2 * w;
  out[0] = (1 - w) * (1 - w) * (1 - w) / 6.0;
  out[1] = (3 * w3 - 6 * w2 + 4) / 6.0;
  out[2] = (-3 * w3 + 3 * w2 + 3 * w + 1) / 6.0;
  out[3] = w3 / 6.0;
}
}  // namespace

InputSpline::InputSpline(const Model& model, double duration_s, int segments, double rate_hz,
                         const Eigen::VectorXd& start)
    : nk_(model.nk()),
      segments_(segments),
      start_(start),
      rate_hz_(rate_hz),
      model_(&model) {
  if (segments < 3) throw std::invalid_argument("InputSpline: at least 3 segments");
  if (!(duration_s > 0) || !(rate_hz > 0)) throw std::invalid_argument("InputSpline: duration");
  const double rows = std::round(duration_s * rate_hz) + 1;
  if (!(rows * (segments + 3.0) <= OptimizationLimits::kBasisEntries))
    throw std::invalid_argument("InputSpline: " + formatNumber(rows) + " samples x " +
                                std::to_string(segments + 3) + " control points exceed " +
                                formatNumber(OptimizationLimits::kBasisEntries));
  const int n = static_cast<int>(rows) - 1;
  const double T = n / rate_hz;  // the duration the samples span exactly
  spacing_s_ = T / segments;
  basis_.setZero(n + 1, segments + 3);
  weights_.assign(n + 1, {});
  active_.assign(n + 1, 0);
  for (int s = 0; s <= n; ++s) {
    if (s % 1024 == 0) throwIfCancelled("plan optimization");
    const double x = (s / rate_hz) / spacing_s_;
    int i = std::min(static_cast<int>(std::floor(x)), segments - 1);
    const double w = std::min(1.0, x - i);
    double b[4];
    cubicWeights(w, b);
    for (int a = 0; a < 4; ++a) basis_(s, i + a) += b[a];
    std::vector<double> per_variable(freePerInput(), 0.0);
    for (int c = 0; c < segments + 3; ++c) {
      const int f = pointVariable(c);
      if (f >= 0) per_variable[f] += basis_(s, c);
    }
    active_[s] = s > 0 ? active_[s - 1] : 0;
    for (int f = 0; f < freePerInput(); ++f)
      if (per_variable[f] != 0.0) {
        weights_[s].emplace_back(f, per_variable[f]);
        active_[s] = std::max(active_[s], variable(nk_ - 1, f) + 1);
      }
  }
}

int InputSpline::pointVariable(int c) const {
  if (c <= 2) return -1;                             // P_-1, P_0, P_1: the start
  if (c >= segments_) return freePerInput() - 1;     // P_{K-1}, P_K, P_{K+1}: the end value
  return c - 3;                                      // P_2 .. P_{K-2}
}

Eigen::MatrixXd InputSpline::controlPoints(const Eigen::VectorXd& z) const {
  Eigen::MatrixXd p(segments_ + 3, nk_);
  for (int j = 0; j < nk_; ++j)
    for (int c = 0; c < segments_ + 3; ++c) {
      const int f = pointVariable(c);
      p(c, j) = f < 0 ? start_[j] : z[variable(j, f)];
    }
  return p;
}

Eigen::MatrixXd InputSpline::sampleInputs(const Eigen::VectorXd& z) const {
  return basis_ * controlPoints(z);
}

Eigen::VectorXd InputSpline::fit(const Eigen::MatrixXd& samples) const {
  const int n = this->samples(), nf = freePerInput();
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, nf);
  Eigen::VectorXd fixed = Eigen::VectorXd::Zero(n);  // the start's share of each sample
  for (int s = 0; s < n; ++s) {
    for (const auto& [f, w] : weights_[s]) A(s, f) = w;
    for (int c = 0; c < 3; ++c) fixed[s] += basis_(s, c);
  }
  // A little ridge toward the end value keeps the fit well posed when samples are few.
  Eigen::MatrixXd normal = A.transpose() * A;
  normal.diagonal().array() += 1e-9 * std::max(1.0, normal.diagonal().maxCoeff());
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(normal);
  Eigen::VectorXd z(variables());
  for (int j = 0; j < nk_; ++j) {
    Eigen::VectorXd rhs(n);
    for (int s = 0; s < n; ++s) {
      const int row = std::min(s, static_cast<int>(samples.rows()) - 1);
      rhs[s] = samples(row, j) - fixed[s] * start_[j];
    }
    const Eigen::VectorXd points = ldlt.solve(A.transpose() * rhs);
    for (int f = 0; f < nf; ++f) z[variable(j, f)] = points[f];
  }
  return z;
}

Eigen::VectorXd InputSpline::smoothedFit(const Eigen::MatrixXd& samples, int segments) const {
  segments = std::clamp(segments, 3, segments_);
  if (segments == segments_) return fit(samples);
  const InputSpline coarse(*model_, (this->samples() - 1) / rate_hz_, segments, rate_hz_, start_);
  return fit(coarse.sampleInputs(coarse.fit(samples)));
}

Eigen::VectorXd InputSpline::transfer(const Eigen::VectorXd& end) const {
  const int nf = freePerInput();
  Eigen::VectorXd z(variables());
  for (int f = 0; f < nf; ++f) {
    const double s = (f + 1.0) / nf;  // the end value at s = 1
    const double w = s * s * s * (10 - 15 * s + 6 * s * s);
    for (int j = 0; j < nk_; ++j) z[variable(j, f)] = (1 - w) * start_[j] + w * end[j];
  }
  return z;
}

InputSpline::LimitRows InputSpline::limitRows(const Model& model, double share) const {
  std::vector<Eigen::Triplet<double>> entries;
  std::vector<double> lower, upper;
  const int points = segments_ + 3;
  const double H = spacing_s_;
  for (int j = 0; j < nk_; ++j) {
    const KinematicVariable& kv = model.kinematic[j];
    // A difference sum_a coef_a P_{c+a}: its variable part and the start's constant.
    auto addRow = [&](int c0, const std::vector<double>& coef, double bound) {
      std::vector<double> per_variable(freePerInput(), 0.0);
      double constant = 0.0;
      for (std::size_t a = 0; a < coef.size(); ++a) {
        const int f = pointVariable(c0 + static_cast<int>(a));
        if (f < 0)
          constant += coef[a] * start_[j];
        else
          per_variable[f] += coef[a];
      }
      bool any = false;
      for (double v : per_variable) any = any || v != 0.0;
      if (!any || !std::isfinite(bound)) return;
      const int row = static_cast<int>(lower.size());
      for (int f = 0; f < freePerInput(); ++f)
        if (per_variable[f] != 0.0) entries.emplace_back(row, variable(j, f), per_variable[f]);
      lower.push_back(-bound - constant);
      upper.push_back(bound - constant);
    };
    for (int c = 0; c + 1 < points; ++c) addRow(c, {-1.0, 1.0}, share * kv.max_speed * H);
    for (int c = 0; c + 2 < points; ++c)
      addRow(c, {1.0, -2.0, 1.0}, share * kv.max_accel * H * H);
  }
  LimitRows out;
  out.matrix.resize(static_cast<Eigen::Index>(lower.size()), variables());
  out.matrix.setFromTriplets(entries.begin(), entries.end());
  out.lower = Eigen::Map<Eigen::VectorXd>(lower.data(), static_cast<Eigen::Index>(lower.size()));
  out.upper = Eigen::Map<Eigen::VectorXd>(upper.data(), static_cast<Eigen::Index>(upper.size()));
  return out;
}

}  // namespace marionette::detail
