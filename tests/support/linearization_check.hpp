// SPDX-License-Identifier: BSD-3-Clause
// The integrator's exact linearization (A, B and the tensions' derivatives) against central
// differences of its step, on one step from x under input u; the step is run with `options`
// (its time step and tolerances set here, tight: differences divide the solve's error by their
// step).  Fails the test if a perturbation changes the step's contact set (taut strings, stops,
// touching contact rows, sliding ones): there the step is a switch, not a derivative.
#pragma once

#include <Eigen/Core>
#include <string>

#include "marionette/models/integrator.hpp"

namespace marionette::test {

void checkLinearization(const ModelPtr& m, const State& x, const Eigen::VectorXd& u,
                        const std::string& label, IntegratorOptions options = {});

}  // namespace marionette::test
