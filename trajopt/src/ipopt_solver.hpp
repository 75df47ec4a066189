// SPDX-License-Identifier: BSD-3-Clause
// Internal to trajopt and the performance step: Ipopt applications set up once, the same way for
// every solve of the same kind.
#pragma once

#include <IpIpoptApplication.hpp>
#include <IpTNLP.hpp>

namespace marionette::detail {

// Initialize, then OptimizeTNLP, one solve at a time in the process.  MUMPS, Ipopt's linear
// solver here, is not thread-safe: two solves at once in one process crash it ("PB allocation
// in DMUMPS_LOAD_INIT", then a segmentation fault; github.com/coin-or/Ipopt/issues/733).
// Ipopt 3.14 serializes its MUMPS calls itself; Debian 12's 3.11 does not, so every solve of
// this project takes its turn here.  Waiting polls the thread's CancelScope (PlanCancelled).
// `app` is released before the turn ends (MUMPS's instance is freed with it): pass a temporary
// that nothing else holds.  Returns Initialize's status when it fails.
Ipopt::ApplicationReturnStatus solveInTurn(Ipopt::SmartPtr<Ipopt::IpoptApplication> app,
                                           const Ipopt::SmartPtr<Ipopt::TNLP>& nlp);

// Quiet (no output, no banner).
Ipopt::SmartPtr<Ipopt::IpoptApplication> quietIpopt();

// For the transcription (ipopt_nlp.hpp): its own Hessian and scales, the adaptive barrier,
// at most `max_iterations`, converged when the DEL rows hold to 1e-9 (their momentum units) and
// complementarity to 1e-9 -- so that the exact re-simulation of its inputs is its own motion.
Ipopt::SmartPtr<Ipopt::IpoptApplication> transcriptionSolver(int max_iterations);

}  // namespace marionette::detail
