// SPDX-License-Identifier: BSD-3-Clause
// The step solved two ways gives the same step: the Newton systems by the pivoting dense LU (the
// reference) and by the joint tree's factorisation with a Schur complement on the taut
// constraints (IntegratorOptions::tree_factorization, the default), from the same states and inputs
// -- states along random rig motion of every built-in model, with strings catching and going slack
// and joints on their stops.  Equal to 1e-10 (q in rad or m; momenta and tensions relative to their
// scale), with the same taut set and the same status; the tree path allocates nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette {
namespace {

TEST(StepEquivalence, TreeFactorisationGivesTheDenseStepOnRandomStatesOfEveryModel) {
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const ModelPtr m = loadModel(name);
    IntegratorOptions dense;
    dense.dt_s = 0.01;
    dense.tree_factorization = false;
    IntegratorOptions tree = dense;
    tree.tree_factorization = true;
    VariationalIntegrator vd(m, dense), vt(m, tree);
    const RestPose rest = computeRestPose(m, m->defaultInputs());
    ASSERT_TRUE(rest.ok) << rest.message;
    int compared = 0, taut_strings = 0, stops = 0, failed = 0;
    for (unsigned seed = 1; seed <= 3; ++seed) {
      std::mt19937 rng(seed);
      State x = vd.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m->nd()), m->defaultInputs());
      State a = vd.makeState(), b = vt.makeState();
      StepReport ra = vd.makeReport(), rb = vt.makeReport();
      Eigen::VectorXd rate(m->nk()), u(m->nk());
      for (int k = 0; k < 400; ++k) {
        if (k % 40 == 0)  // a new random rig velocity every 0.4 s, up to 0.5 of each speed limit
          for (int i = 0; i < m->nk(); ++i) {
            const double vmax = 0.5 * std::min(m->kinematic[i].max_speed, 1.0);
            rate[i] = std::uniform_real_distribution<double>(-vmax, vmax)(rng);
          }
        for (int i = 0; i < m->nk(); ++i)
          u[i] = std::clamp(x.rho[i] + dense.dt_s * rate[i], m->kinematic[i].lower,
                            m->kinematic[i].upper);
        const StepStatus sa = vd.step(x, u, a, &ra);
        const StepStatus sb = vt.step(x, u, b, &rb);
        ASSERT_EQ(sa, sb) << "k=" << k;
        if (sa != StepStatus::Ok) {
          ++failed;
          for (int i = 0; i < m->nk(); ++i) rate[i] = -rate[i];  // back off, from the same state
          continue;
        }
        ++compared;
        const double p_scale = std::max(1.0, a.p.cwiseAbs().maxCoeff());
        EXPECT_LE((a.q - b.q).cwiseAbs().maxCoeff(), 1e-10) << "k=" << k;
        EXPECT_LE((a.p - b.p).cwiseAbs().maxCoeff(), 1e-10 * p_scale) << "k=" << k;
        EXPECT_EQ(ra.taut, rb.taut) << "k=" << k;
        EXPECT_EQ(ra.stops_active, rb.stops_active) << "k=" << k;
        const double t_scale = std::max(1.0, ra.tension_N.cwiseAbs().maxCoeff());
        EXPECT_LE((ra.tension_N - rb.tension_N).cwiseAbs().maxCoeff(), 1e-10 * t_scale)
            << "k=" << k;
        for (char t : ra.taut) taut_strings += t;
        stops += ra.stops_active;
        x = a;  // go on along the dense step's trajectory
      }
      // The tree path allocates nothing either, once sized (Eigen's allocator switched off).
      Eigen::internal::set_is_malloc_allowed(false);
      const StepStatus still = vt.step(x, x.rho, b, &rb);
      Eigen::internal::set_is_malloc_allowed(true);
      EXPECT_EQ(still, StepStatus::Ok);
    }
    // The comparison covered what it should: nearly every step, taut strings, and (on the
    // puppets with stops) joints on their stops.
    EXPECT_GE(compared, 1150) << failed << " failed steps";
    EXPECT_GT(taut_strings, compared / 2);
    if (!m->stops.empty() && m->nd() > 4) {
      EXPECT_GT(stops, 0);
    }
    std::printf("%s: %d steps compared, %d failed alike; %.2f taut strings and %.2f stops a step\n",
                name.c_str(), compared, failed, double(taut_strings) / compared,
                double(stops) / compared);
  }
}

}  // namespace
}  // namespace marionette
