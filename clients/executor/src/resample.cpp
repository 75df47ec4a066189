// SPDX-License-Identifier: BSD-3-Clause
// Limit-preserving resampling: the samples as the control points of a uniform quadratic B-spline
// (see resample.hpp for why the limits hold).
#include "marionette/executor/resample.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace marionette::executor {

Eigen::MatrixXd resampleSamples(const Eigen::MatrixXd& samples, double sample_rate_hz,
                                double send_rate_hz, double rate_scale) {
  if (samples.rows() == 0) throw std::invalid_argument("resampleSamples: no samples");
  if (!(sample_rate_hz > 0) || !(send_rate_hz > 0) || !(rate_scale > 0))
    throw std::invalid_argument("resampleSamples: rates must be > 0");
  // Playback time advanced per row sent, in sample periods.
  const double step = rate_scale * sample_rate_hz / send_rate_hz;
  if (std::abs(step - 1.0) <= 1e-9) return samples;

  const long last = samples.rows() - 1;  // N
  // The curve runs over x = t / h + 1/2 in [0, N + 1]: piece i covers [i, i + 1) and is centred
  // on sample i.
  const double span = static_cast<double>(last + 1);
  const long rows = static_cast<long>(std::ceil(span / step - 1e-9)) + 1;
  Eigen::MatrixXd out(rows, samples.cols());
  auto control = [&](long i) { return samples.row(std::clamp(i, 0L, last)); };
  for (long r = 0; r < rows; ++r) {
    const double x = std::min(span, r * step);
    long i = static_cast<long>(std::floor(x));
    double w = x - static_cast<double>(i);
    if (i > last) {  // x = N + 1 exactly: the end of piece N
      i = last;
      w = 1.0;
    }
    out.row(r) = 0.5 * (1 - w) * (1 - w) * control(i - 1) + (0.5 + w - w * w) * control(i) +
                 0.5 * w * w * control(i + 1);
  }
  return out;
}

}  // namespace marionette::executor
