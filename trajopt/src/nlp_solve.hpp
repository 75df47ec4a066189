// SPDX-License-Identifier: BSD-3-Clause
// One call for either solver of a SparseNlp: the interior point written for the transcription's
// structure (interior_point.hpp), or Ipopt with MUMPS (ipopt_nlp.hpp; one solve at a time in the
// process, ipopt_solver.hpp), both converged when the rows hold to 1e-9 in their units and
// complementarity to 1e-9, at most max_iterations.
#pragma once

#include <Eigen/Core>

#include "interior_point.hpp"
#include "sparse_nlp.hpp"

namespace marionette::detail {

enum class NlpSolver { kInteriorPoint, kIpopt };

InteriorPointResult solveNlp(SparseNlp& nlp, const Eigen::VectorXd& start, int max_iterations,
                             NlpSolver solver, const KeepGoing& keep_going = {});

}  // namespace marionette::detail
