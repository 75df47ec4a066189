// SPDX-License-Identifier: BSD-3-Clause
// Resampling a performance to another send rate or speed so that the speed, acceleration and
// range limits its samples kept at their own rate hold at any send rate.
//
// Linear interpolation would not do: its corners have a finite-difference acceleration that
// grows with the send rate (a 50 Hz plan at its acceleration limit breaks it twice over at
// 100 Hz).  The samples are instead the control points of a uniform quadratic B-spline, held at
// the first sample before the start and at the last after the end.  Its speed at the midpoints
// between samples is the samples' finite-difference speed, linear in between; its acceleration is
// the samples' second difference / h^2, constant over each sample's period.  Every finite
// difference of it, at any step, is an average of those, so it stays within them; its values stay
// within the samples' range (a B-spline lies in the hull of its control points).  It passes within
// h^2 |a| / 8 of each sample (h the samples' period, a their acceleration there): 0.5 mm at 50 Hz
// for 10 m/s^2.
//
// Contents
//   resampleSamples   the rows at the send rate.
#pragma once

#include <Eigen/Core>

namespace marionette::executor {

// samples: N+1 rows at sample_rate_hz (t_i = i / sample_rate_hz), n columns.  Rows go out at
// send_rate_hz; rate_scale is the playback speed (0.5: half speed).  The first row is the first
// sample and the last row the last sample; in between the curve starts half a sample period
// before t_0 and ends half a period after t_N (performance time), so the result spans
// (N + 1) / sample_rate_hz / rate_scale seconds.  When the rows fall on the samples' own times
// (send_rate_hz * rate_scale == sample_rate_hz), the samples are returned as they are.
Eigen::MatrixXd resampleSamples(const Eigen::MatrixXd& samples, double sample_rate_hz,
                                double send_rate_hz, double rate_scale);

}  // namespace marionette::executor
