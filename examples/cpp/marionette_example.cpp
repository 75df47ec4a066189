// SPDX-License-Identifier: BSD-3-Clause
// The marionette libraries from an installed prefix: load a model, find its rest pose, simulate
// it with the variational integrator, check a state for collision, plan a motion.
//
//   marionette_example [MODEL [SCENE [GOAL [PLANNER]]]]   default: planar-arm empty q:theta1=0.3
//   est
//
// Prints one line per step; exits 0 when the plan is exact, 1 when it is not, 2 on an error.
#include <cstdio>
#include <exception>
#include <string>

#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/version.hpp"
#include "marionette/planner/planner.hpp"

int main(int argc, char** argv) {
  const std::string model_name = argc > 1 ? argv[1] : "planar-arm";
  const std::string scene_name = argc > 2 ? argv[2] : "empty";
  const std::string goal_text = argc > 3 ? argv[3] : "q:theta1=0.3";
  const std::string planner = argc > 4 ? argv[4] : "est";
  try {
    std::printf("marionette headers %s, libraries %s\n", MARIONETTE_VERSION,
                marionette::libraryVersion());

    // A built-in model by name, or a model file's path.
    const marionette::ModelPtr model = marionette::loadModel(model_name);
    std::printf("model %s: %d joints, %d rig inputs, %d strings\n", model->name.c_str(),
                model->nd(), model->nk(), model->nstrings());

    // Where it hangs for the rig's default setpoints.
    const Eigen::VectorXd rho = model->defaultInputs();
    const marionette::RestPose rest = marionette::computeRestPose(model, rho);
    if (!rest.ok) throw std::runtime_error("no rest pose: " + rest.message);
    std::printf("rest pose: stationarity %.3g, string tensions", rest.stationarity);
    for (int s = 0; s < rest.tension_N.size(); ++s) std::printf(" %.6f", rest.tension_N[s]);
    std::printf(" N\n");

    // One second with the rig still, started at rest: the puppet stays there.
    marionette::VariationalIntegrator vi(model, {/*dt_s=*/0.01});
    marionette::State x = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(model->nd()), rho);
    for (int k = 0; k < 100; ++k)
      if (vi.step(x, rho, x) != marionette::StepStatus::Ok)
        throw std::runtime_error("step " + std::to_string(k) + " failed");
    std::printf("simulated 1 s at rest: joints moved %.3g (rad or m)\n",
                (x.q - rest.q).cwiseAbs().maxCoeff());

    // The rest state against the stage: links and strings.
    const marionette::ScenePtr scene = marionette::loadScene(scene_name);
    auto collision = std::make_shared<const marionette::CollisionModel>(model, scene);
    marionette::CollisionChecker checker(collision);
    Eigen::VectorXd q(model->nq());
    q << rest.q, rho;
    const marionette::StateCheck check = checker.checkState(q);
    std::printf("at rest in '%s': %s, %.4f m from the stage\n", scene->name.c_str(),
                check.in_collision ? ("in collision: " + check.pair.describe()).c_str() : "clear",
                check.stage_clearance_m);

    // A motion to the goal, re-simulated and re-checked before it is returned.
    marionette::PlanRequest request;
    request.model = model;
    request.scene = scene;
    request.collision = collision;
    request.goal = marionette::GoalSpec::parse(goal_text);
    request.options.planner = planner;
    request.options.seed = 1;  // its propagation budget, not the clock, ends the search
    const marionette::Plan plan = marionette::planMotion(request);
    std::printf("plan %s seed 1: %s, %ld samples at %g Hz, goal reached at sample %d\n",
                planner.c_str(), marionette::toString(plan.outcome),
                static_cast<long>(plan.inputs.rows()), plan.rate_hz, plan.goal_sample);
    return plan.outcome == marionette::PlanOutcome::Exact ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "marionette_example: %s\n", e.what());
    return 2;
  }
}
