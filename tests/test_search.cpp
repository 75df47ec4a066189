// SPDX-License-Identifier: BSD-3-Clause
// The search library's door for outside planners: the registry, the OMPL layer a registered
// planner gets (the same as the built-in ones'), the benchmark accepting it, and the propagation
// budget that keeps a failing search a function of its seed.
#include <gtest/gtest.h>
#include <ompl/base/PlannerStatus.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ompl/base/goals/GoalSampleableRegion.h>
#include <ompl/base/spaces/RealVectorStateSpace.h>
#include <ompl/control/planners/rrt/RRT.h>
#include <ompl/control/planners/sst/SST.h>
#include <ompl/control/planners/syclop/SyclopRRT.h>
#include <ompl/datastructures/NearestNeighborsLinear.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <sstream>

#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/benchmark/benchmark.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/search/decomposition.hpp"
#include "marionette/search/plugin.hpp"
#include "marionette/search/registry.hpp"
#include "marionette/search/search_space.hpp"
#include "marionette/search/tree_search.hpp"
#include "scaled_nearest.hpp"

using namespace marionette;

namespace {

// OMPL's control planner P registered from outside as `name`, with the built-in planners' goal
// bias.
template <class P>
void registerOutside(const std::string& name, const std::string& source) {
  PlannerInfo info;
  info.name = name;
  info.source = source;
  registerPlanner(info, [](const TreeSearchSpace& space, const PlannerInfo& registered) {
    auto p = std::make_shared<P>(space.spaceInformation());
    p->setGoalBias(registered.goal_bias);
    return p;
  });
}

// "outside-rrt" and "outside-sst": OMPL's control RRT and SST made by a factory from outside,
// with the built-in planners' goal bias; "outside-syclop": SyclopRRT over the projection grid.
// Registered once per process.
void registerOutsidePlanners() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerOutside<ompl::control::RRT>("outside-rrt",
                                        "OMPL's control RRT, registered from a test");
    registerOutside<ompl::control::SST>("outside-sst",
                                        "OMPL's control SST, registered from a test");
    PlannerInfo syclop;
    syclop.name = "outside-syclop";
    syclop.log_name = "control_SyclopRRT";
    registerPlanner(syclop, [](const TreeSearchSpace& space, const PlannerInfo&) {
      return std::make_shared<ompl::control::SyclopRRT>(space.spaceInformation(),
                                                        projectionGrid(space, 8));
    });
    syclop.name = "outside-syclop-goals";  // the same, asking for a point goal's states
    syclop.goal_states = 4;
    registerPlanner(syclop, [](const TreeSearchSpace& space, const PlannerInfo&) {
      return std::make_shared<ompl::control::SyclopRRT>(space.spaceInformation(),
                                                        projectionGrid(space, 8));
    });
  });
}

PlanRequest planarArmRequest(const std::string& planner, unsigned long seed) {
  PlanRequest req;
  req.model = loadModel("planar-arm");
  req.scene = loadScene("empty");
  req.goal = GoalSpec::parse(findBenchmarkProblem("planar-arm-empty").goal);
  req.options.planner = planner;
  req.options.seed = seed;
  req.options.time_limit_s = 60.0;  // ended by the goal or the budget, never by the clock here
  req.options.max_propagations = 2'000'000;
  return req;
}

// The planar arm at rest at its default inputs, on the empty stage (the goal left to the test).
TreeSearchProblem planarArmAtRest() {
  const ModelPtr model = loadModel("planar-arm");
  TreeSearchProblem p;
  p.collision = std::make_shared<CollisionModel>(model, loadScene("empty"));
  const StartState rest = resolveStart(model, model->defaultInputs(), StartSpec{});
  p.q0 = rest.q;
  p.qdot0 = rest.qdot;
  p.rho0 = model->defaultInputs();
  return p;
}

std::string fieldOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const FieldError& e) {
    return e.field();
  }
  return "(nothing thrown)";
}

}  // namespace

TEST(Registry, RefusesBadRegistrationsNamingTheField) {
  registerOutsidePlanners();
  auto rrt = [](const TreeSearchSpace& s, const PlannerInfo&) {
    return std::make_shared<ompl::control::RRT>(s.spaceInformation());
  };
  PlannerInfo info;
  for (const char* bad : {"", "Upper", "with space", "a/b", "rrt", "outside-rrt"}) {
    info.name = bad;
    EXPECT_EQ(fieldOf([&] { registerPlanner(info, rrt); }), "planner.name") << bad;
  }
  info.name = std::string(41, 'x');
  EXPECT_EQ(fieldOf([&] { registerPlanner(info, rrt); }), "planner.name");
  info.name = "never-registered";
  EXPECT_EQ(fieldOf([&] { registerPlanner(info, nullptr); }), "planner.factory");
  info.kind = SearchKind::Roadmap;
  EXPECT_EQ(fieldOf([&] { registerPlanner(info, rrt); }), "planner.kind");
  EXPECT_FALSE(findPlanner("never-registered"));
  // The built-in planners first, in their order, then the registered ones with their log names.
  const std::vector<std::string> names = plannerNames();
  ASSERT_GE(names.size(), 8u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 6),
            (std::vector<std::string>{"est", "kpiece", "rrt", "sst", "pdst", "prm"}));
  EXPECT_EQ(findPlanner("outside-rrt")->log_name, "control_outside-rrt");
  EXPECT_FALSE(findPlanner("outside-rrt")->built_in);
  EXPECT_EQ(findPlanner("outside-syclop")->log_name, "control_SyclopRRT");
  EXPECT_EQ(plannerParameters("outside-rrt"), plannerParameters("rrt"));
  EXPECT_EQ(fieldOf([] { plannerParameters("nope"); }), "options.planner");
}

// A planner registered from outside gets exactly what the built-in one gets: the same OMPL
// planner made by a factory gives the same plan, sample for sample, for every seed.
TEST(Registry, AnOutsideRrtPlansExactlyAsTheBuiltInRrt) {
  registerOutsidePlanners();
  for (unsigned long seed : {1ul, 2ul, 3ul}) {
    const Plan builtin = planMotion(planarArmRequest("rrt", seed));
    const Plan outside = planMotion(planarArmRequest("outside-rrt", seed));
    ASSERT_EQ(builtin.outcome, PlanOutcome::Exact) << seed;
    ASSERT_EQ(outside.samples(), builtin.samples()) << seed;
    EXPECT_EQ((outside.inputs - builtin.inputs).cwiseAbs().maxCoeff(), 0.0) << seed;
    EXPECT_EQ(outside.stats.propagations, builtin.stats.propagations) << seed;
    EXPECT_EQ(outside.stats.planner, "outside-rrt");
  }
}

// The built-in rrt and sst find their nearest states by their own exact scan
// (scaled_nearest.hpp), OMPL's by GNAT: on PuppetCopter's searches of thousands of states in 64
// dimensions, as the README asks for them but stopped short by their budget, each pair builds
// the same tree and gives the same inputs.  SST's selection radius is widened so that its
// queries for the states within it return hundreds (the metric's distances are tens).
TEST(Registry, TheBuiltInNearestStatesAreOmplsOnThousandsOfStatesTrees) {
  registerOutsidePlanners();
  auto request = [](const std::string& planner) {
    PlanRequest req;
    req.model = loadModel("puppetcopter");
    req.scene = loadScene("table");
    req.goal = GoalSpec::parse("point:hand_l=0.05,0.24,0.40;radius=0.04");
    req.options.planner = planner;
    req.options.seed = 3;
    req.options.time_limit_s = 0;  // ended by the budget
    req.options.max_propagations = 12'000;
    if (planner.find("sst") != std::string::npos)
      req.options.parameters = {{"selection_radius", "40"}, {"pruning_radius", "0.5"}};
    return req;
  };
  for (const std::string planner : {"rrt", "sst"}) {
    const Plan builtin = planMotion(request(planner));
    const Plan outside = planMotion(request("outside-" + planner));
    ASSERT_GT(builtin.stats.tree_states, 500) << planner;
    ASSERT_GT(builtin.samples(), 0) << planner;
    EXPECT_EQ(outside.stats.tree_states, builtin.stats.tree_states) << planner;
    EXPECT_EQ(outside.stats.propagations, builtin.stats.propagations) << planner;
    EXPECT_EQ(outside.stats.best_goal_distance, builtin.stats.best_goal_distance) << planner;
    ASSERT_EQ(outside.samples(), builtin.samples()) << planner;
    EXPECT_EQ((outside.inputs - builtin.inputs).cwiseAbs().maxCoeff(), 0.0) << planner;
  }
}

// The scan itself against OMPL's linear search, on points in 7 dimensions with unequal scales,
// some of them repeated: the nearest, the k nearest for k from 1 to more than there are, and
// those within radii that fall exactly on a point, at the same distances in the same order
// (which of two repeated points comes first may differ); the same after removals; nothing
// after a clear.
TEST(NearestStates, TheScanAnswersAsOmplsLinearSearch) {
  struct Metric {  // MarionetteSpace's sum, on its own scales
    Eigen::VectorXd scale;
    unsigned int getDimension() const { return static_cast<unsigned int>(scale.size()); }
    double squaredDistance(const double* x, const double* y,
                           double stop_above = std::numeric_limits<double>::infinity()) const {
      double d2 = 0.0;
      for (int i = 0; i < scale.size(); ++i) {
        const double d = (x[i] - y[i]) / scale[i];
        d2 += d * d;
        if (d2 > stop_above) return d2;
      }
      return d2;
    }
  };
  constexpr int kDim = 7;
  auto metric = std::make_shared<Metric>();
  metric->scale.resize(kDim);
  metric->scale << 0.1, 0.2, 0.2, 1.0, 4.0, 0.5, 0.05;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<std::vector<double>> points(400, std::vector<double>(kDim));
  for (std::size_t i = 0; i < points.size(); ++i)  // the last 40 repeat points 60-99
    for (int j = 0; j < kDim; ++j) points[i][j] = i >= 360 ? points[i - 300][j] : uniform(rng);
  using Point = const double*;
  const auto distance = [&](const Point& a, const Point& b) {
    return std::sqrt(metric->squaredDistance(a, b));
  };
  detail::ScaledNearest<Point, Metric> scan(metric, [](const Point& p) { return p; });
  ompl::NearestNeighborsLinear<Point> linear;
  scan.setDistanceFunction(distance);
  linear.setDistanceFunction(distance);
  for (const auto& p : points) {
    scan.add(p.data());
    linear.add(p.data());
  }
  auto distances = [&](const std::vector<Point>& found, const Point& from) {
    std::vector<double> d;
    for (const Point& p : found) d.push_back(distance(p, from));
    return d;
  };
  auto compare = [&](const Point& query, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(distance(scan.nearest(query), query), distance(linear.nearest(query), query));
    std::vector<Point> a, b;
    for (std::size_t k : {std::size_t{1}, std::size_t{5}, std::size_t{17}, scan.size() + 3}) {
      scan.nearestK(query, k, a);
      linear.nearestK(query, k, b);
      ASSERT_EQ(a.size(), std::min(k, scan.size()));
      EXPECT_EQ(distances(a, query), distances(b, query)) << "k " << k;
    }
    linear.nearestK(query, 10, b);
    for (const double radius : {distance(b.back(), query), 0.5 * distance(b.front(), query)}) {
      scan.nearestR(query, radius, a);
      linear.nearestR(query, radius, b);
      std::sort(b.begin(), b.end(), [&](const Point& p, const Point& q) {
        return distance(p, query) < distance(q, query);
      });
      EXPECT_EQ(distances(a, query), distances(b, query)) << "radius " << radius;
    }
  };
  std::vector<std::vector<double>> queries(40, std::vector<double>(kDim));
  for (auto& q : queries)
    for (double& v : q) v = uniform(rng);
  for (std::size_t i = 0; i < queries.size(); ++i)
    compare(queries[i].data(), "query " + std::to_string(i));
  compare(points[70].data(), "a point that is repeated");
  for (std::size_t i = 0; i < points.size(); i += 7) {
    EXPECT_TRUE(scan.remove(points[i].data()));
    EXPECT_TRUE(linear.remove(points[i].data()));
  }
  EXPECT_FALSE(scan.remove(points[0].data()));
  ASSERT_EQ(scan.size(), linear.size());
  std::vector<Point> listed;
  scan.list(listed);
  EXPECT_EQ(listed.size(), scan.size());
  for (std::size_t i = 0; i < 10; ++i)
    compare(queries[i].data(), "after removals " + std::to_string(i));
  scan.clear();
  EXPECT_EQ(scan.size(), 0u);
  EXPECT_THROW(scan.nearest(queries[0].data()), ompl::Exception);
}

// Syclop over the projection grid reaches the planar arm's goal, verified like every plan, and
// the same seed gives the same plan.
TEST(Registry, SyclopOnTheProjectionGridPlansAndRepeats) {
  registerOutsidePlanners();
  const Plan a = planMotion(planarArmRequest("outside-syclop", 1));
  const Plan b = planMotion(planarArmRequest("outside-syclop", 1));
  EXPECT_EQ(a.outcome, PlanOutcome::Exact) << a.message;
  ASSERT_EQ(a.samples(), b.samples());
  EXPECT_EQ((a.inputs - b.inputs).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(a.stats.search_ended, "goal");
  // A point goal offers Syclop no goal states: it ends on its own, saying why (the benchmark
  // logs it as OMPL's INVALID_GOAL, not as a timeout).
  PlanRequest point = planarArmRequest("outside-syclop", 1);
  point.goal = GoalSpec::parse("point:tip=0.2,0,0.6;radius=0.05");
  const Plan none = planMotion(point);
  EXPECT_EQ(none.outcome, PlanOutcome::NotFound);
  EXPECT_EQ(none.stats.search_ended, "Invalid goal") << none.message;
  // Asking for goal states (PlannerInfo::goal_states), it gets rest states that meet the goal,
  // reaches it, and the same seed gives the same plan.
  point.options.planner = "outside-syclop-goals";
  const Plan reached = planMotion(point), again = planMotion(point);
  EXPECT_EQ(reached.outcome, PlanOutcome::Exact) << reached.message;
  EXPECT_EQ(reached.stats.search_ended, "goal");
  ASSERT_EQ(reached.samples(), again.samples());
  EXPECT_EQ((reached.inputs - again.inputs).cwiseAbs().maxCoeff(), 0.0);
}

// The goal states a point goal offers when a planner asks: valid states of the space, each
// meeting the goal (within the region's aimed tolerance) at rest, the same ones for the same
// seed; none for a goal no rest pose meets; asking does not count the goal as reached.
TEST(SearchSpace, APointGoalOffersRestStatesThatMeetItWhenAsked) {
  TreeSearchProblem p = planarArmAtRest();
  const ModelPtr model = p.collision->modelPtr();
  p.goal = GoalSpec::parse("point:tip=0.2,0,0.6;radius=0.05");
  p.seed = 7;
  auto offered = [&](const TreeSearchProblem& problem, std::vector<std::vector<double>>* out) {
    TreeSearchSpace space(problem);
    auto goal = std::dynamic_pointer_cast<ompl::base::GoalSampleableRegion>(
        space.problemDefinition()->getGoal());
    EXPECT_EQ(goal->maxSampleCount(), 0u);  // none until asked
    const int n = space.offerGoalStates(3);
    EXPECT_EQ(goal->maxSampleCount(), static_cast<unsigned>(n));
    EXPECT_FALSE(space.counters().goal_reached);
    const auto& si = space.spaceInformation();
    ompl::base::State* s = si->allocState();
    for (int k = 0; k < 3 * n; ++k) {
      goal->sampleGoal(s);
      EXPECT_TRUE(si->isValid(s));
      double distance = 0;
      EXPECT_TRUE(goal->isSatisfied(s, &distance)) << distance;
      const double* x = s->as<ompl::base::RealVectorStateSpace::StateType>()->values;
      out->emplace_back(x, x + space.layout().dim());
      for (int i = 0; i < model->nk(); ++i)  // at rest: the rig still
        EXPECT_EQ(x[space.layout().rhoDot() + i], 0.0);
    }
    si->freeState(s);
    return n;
  };
  std::vector<std::vector<double>> first, second;
  EXPECT_GE(offered(p, &first), 1);
  offered(p, &second);
  EXPECT_EQ(first, second);
  // A point out of the arm's reach: no rest state meets it, none offered.
  p.goal = GoalSpec::parse("point:tip=0.2,0,3;radius=0.05");
  std::vector<std::vector<double>> none;
  EXPECT_EQ(offered(p, &none), 0);
}

// The search's own space, as a planner gets it: bounds of the right size, a valid start whose
// momentum is that of rest, the goal region a sampleable one for a joint goal.
TEST(SearchSpace, IsTheProblemAsEveryPlannerGetsIt) {
  TreeSearchProblem p = planarArmAtRest();
  const ModelPtr model = p.collision->modelPtr();
  p.goal = GoalSpec::parse(findBenchmarkProblem("planar-arm-empty").goal);
  const TreeSearchSpace space(p);
  const StateLayout& L = space.layout();
  EXPECT_EQ(L.dim(), 2 * model->nd() + 2 * model->nk());
  EXPECT_EQ(space.spaceInformation()->getStateDimension(), static_cast<unsigned>(L.dim()));
  const ompl::base::State* start = space.problemDefinition()->getStartState(0);
  EXPECT_TRUE(space.spaceInformation()->isValid(start));
  auto goal = space.problemDefinition()->getGoal();
  ASSERT_TRUE(goal->hasType(ompl::base::GOAL_SAMPLEABLE_REGION));
  EXPECT_GT(goal->as<ompl::base::GoalSampleableRegion>()->maxSampleCount(), 0u);
  EXPECT_FALSE(goal->isSatisfied(start));  // 0.3 rad away
  // An empty path is the rig at rest, braked and held: knots all at the start inputs.
  ompl::control::PathControl empty(space.spaceInformation());
  const RigTrajectory held = space.rigTrajectory(empty);
  EXPECT_GE(held.knots(), 2);
  EXPECT_EQ((held.lastPosition() - p.rho0).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(fieldOf([&] { projectionGrid(space, 0); }), "cells_per_side");
  EXPECT_GT(projectionGrid(space, 4)->getNumRegions(), 15);
  p.q0[0] = std::nan("");  // no state at all
  EXPECT_EQ(fieldOf([&] { TreeSearchSpace bad(p); }), "start");
}

// The budget in propagations: a search it ends is a function of the seed (not of the clock),
// stops within one expansion of the budget, and says so.
TEST(SearchBudget, APropagationBudgetEndsTheSearchTheSameWayEveryTime) {
  PlanRequest req = planarArmRequest("est", 1);
  req.model = loadModel("arm3d");
  req.scene = loadScene("pillars");
  req.goal = GoalSpec::parse("point:hand=1.1,1.1,1.9;radius=0.01");  // on the stage, out of reach
  req.options.max_propagations = 20'000;
  const Plan a = planMotion(req), b = planMotion(req);
  EXPECT_NE(a.outcome, PlanOutcome::Exact);
  EXPECT_GE(a.stats.propagations, 20'000);
  EXPECT_LE(a.stats.propagations, 20'000 + 16 * 50);  // one expansion's steps, a brake check's
  EXPECT_EQ(a.stats.propagations, b.stats.propagations);
  EXPECT_EQ(a.stats.tree_states, b.stats.tree_states);
  EXPECT_EQ(a.stats.best_goal_distance, b.stats.best_goal_distance);
  req.options.max_propagations = -1;
  EXPECT_EQ(fieldOf([&] { planMotion(req); }), "options.max_propagations");
}

// Benchmark problems are complete and public: every goal parses as GoalSpec::parse reads it
// (planar-arm's REST+0.3 resolved), every start is the rest pose, unknown names are refused.
TEST(Benchmark, ProblemsAreCompleteAndTheirGoalsParse) {
  for (const BenchmarkProblem& p : benchmarkProblems()) {
    SCOPED_TRACE(p.name);
    EXPECT_NO_THROW(GoalSpec::parse(p.goal));
    EXPECT_EQ(p.goal.find("REST"), std::string::npos);
    EXPECT_TRUE(p.start.from_rest);
    EXPECT_EQ(p.start_inputs.size(), 0);
    EXPECT_EQ(&findBenchmarkProblem(p.name), &p);
  }
  const ModelPtr arm = loadModel("planar-arm");
  const double theta1 = resolveStart(arm, arm->defaultInputs(), StartSpec{}).q[0];
  const GoalSpec goal = GoalSpec::parse(findBenchmarkProblem("planar-arm-empty").goal);
  EXPECT_NEAR(goal.values.at(0).second, theta1 + 0.3, 1e-8);
  EXPECT_EQ(fieldOf([] { findBenchmarkProblem("nope"); }), "problem");
}

// A registered planner runs in the benchmark and its OMPL log beside the built-in ones; a log
// of runs of a planner this process does not know is written too (no crash), and summarized.
TEST(Benchmark, RegisteredAndUnknownPlannersAreLoggedAndSummarized) {
  registerOutsidePlanners();
  BenchmarkOptions o;
  o.runs = 1;
  o.max_propagations = 200'000;
  o.time_limit_s = 60;
  o.planners = {"rrt", "outside-rrt"};
  ProblemRuns runs = runBenchmark(findBenchmarkProblem("planar-arm-empty"), o);
  ASSERT_EQ(runs.planners.size(), 2u);
  EXPECT_EQ(runs.planners[1].runs[0].outcome, runs.planners[0].runs[0].outcome);
  EXPECT_EQ(runs.planners[1].runs[0].stats.propagations,
            runs.planners[0].runs[0].stats.propagations);
  PlannerRuns stranger = runs.planners[1];
  stranger.planner = "from-a-plugin-not-here";
  stranger.log_name.clear();
  runs.planners.push_back(stranger);
  std::ostringstream log;
  writeOmplBenchmarkLog(runs, log);
  EXPECT_NE(log.str().find("\ncontrol_RRT\n"), std::string::npos);
  EXPECT_NE(log.str().find("\ncontrol_outside-rrt\n"), std::string::npos);
  EXPECT_NE(log.str().find("\ncontrol_from-a-plugin-not-here\n"), std::string::npos);
  const std::vector<SummaryRow> rows = summarize(runs);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].planner, "from-a-plugin-not-here");
  EXPECT_EQ(rows[2].runs, 1);
}

// Each run's status in the OMPL log is what happened, as Planner Arena reads it (OMPL's
// PlannerStatus): a time limit or a propagation budget is a timeout, a planner that ended on its
// own gives its own status, a planner that threw is a crash, the roadmap without a path an abort.
TEST(Benchmark, EachRunsStatusInTheLogIsWhatHappened) {
  ProblemRuns runs;
  runs.problem = findBenchmarkProblem("planar-arm-empty");
  PlannerRuns tree;
  tree.planner = "rrt";
  auto run = [](PlanOutcome outcome, const std::string& ended, bool error = false) {
    BenchmarkRun r;
    r.outcome = outcome;
    r.stats.search_ended = ended;
    r.error = error;
    return r;
  };
  tree.runs = {run(PlanOutcome::Exact, "goal"), run(PlanOutcome::Approximate, "deadline"),
               run(PlanOutcome::NotFound, "deadline"), run(PlanOutcome::NotFound, "propagations"),
               run(PlanOutcome::NotFound, "Invalid goal"), run(PlanOutcome::NotFound, "Invalid start"),
               run(PlanOutcome::NotFound, "", true)};
  PlannerRuns roadmap;
  roadmap.planner = "prm";
  roadmap.runs = {run(PlanOutcome::NotFound, "")};
  runs.planners = {tree, roadmap};
  std::ostringstream log;
  writeOmplBenchmarkLog(runs, log);
  // The status column of every run line, in order.
  std::istringstream in(log.str());
  std::vector<int> statuses;
  int status_column = -1, columns = 0, remaining = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find(" properties for each run") != std::string::npos) {
      columns = std::stoi(line);
      for (int c = 0; c < columns; ++c) {
        std::getline(in, line);
        if (line == "status ENUM") status_column = c;
      }
      std::getline(in, line);
      remaining = std::stoi(line);  // "N runs"
      continue;
    }
    if (remaining > 0) {
      --remaining;
      std::vector<std::string> values;
      std::istringstream fields(line);
      for (std::string v; std::getline(fields, v, ';');) values.push_back(v);
      ASSERT_GT(static_cast<int>(values.size()), status_column) << line;
      statuses.push_back(std::stoi(values[status_column]));
    }
  }
  using S = ompl::base::PlannerStatus;
  EXPECT_EQ(statuses, (std::vector<int>{S::EXACT_SOLUTION, S::APPROXIMATE_SOLUTION, S::TIMEOUT,
                                        S::TIMEOUT, S::INVALID_GOAL, S::INVALID_START, S::CRASH,
                                        S::ABORT}));
}

// A plugin registers its planners when loaded; what it registered plans as the built-in planner
// it wraps.  A path that is not a plugin is refused naming it.
TEST(Plugin, RegistersItsPlannersAndRefusesWhatIsNotOne) {
  EXPECT_EQ(loadPlannerPlugin(MARIONETTE_TEST_PLUGIN), (std::vector<std::string>{"plugin-rrt"}));
  const Plan plugin = planMotion(planarArmRequest("plugin-rrt", 2));
  const Plan builtin = planMotion(planarArmRequest("rrt", 2));
  ASSERT_EQ(plugin.samples(), builtin.samples());
  EXPECT_EQ((plugin.inputs - builtin.inputs).cwiseAbs().maxCoeff(), 0.0);
  // Loaded again, it would register the same name: refused, naming the plugin.
  auto problem = [](const std::string& path) {
    try {
      loadPlannerPlugin(path);
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), "plugin");
      return e.problem();
    }
    return std::string("(nothing thrown)");
  };
  EXPECT_NE(problem(MARIONETTE_TEST_PLUGIN).find("already registered"), std::string::npos);
  EXPECT_NE(problem("/nonexistent/plugin.so").find("/nonexistent/plugin.so: cannot be loaded"),
            std::string::npos);
  EXPECT_NE(problem("libm.so.6").find("cannot be loaded"), std::string::npos);  // not searched
  const std::string libm = "/lib/x86_64-linux-gnu/libm.so.6";
  EXPECT_NE(problem(libm).find("defines no marionette_register_planners()"), std::string::npos);
}

// A hostile plugin neither ends the process nor pins its caller: an entry point that throws an
// int is refused naming the plugin (what it registered before stays), a planner whose path holds
// one control for a million seconds is refused before the path is expanded, and a FIFO named as
// a plugin is refused without waiting for a writer.
TEST(Plugin, AHostilePluginIsRefusedWithoutEndingOrPinningAnything) {
  try {
    loadPlannerPlugin(MARIONETTE_TEST_PLUGIN_HOSTILE);
    ADD_FAILURE() << "an entry point that throws was accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "plugin");
    EXPECT_NE(e.problem().find("not a std::exception"), std::string::npos) << e.problem();
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    planMotion(planarArmRequest("plugin-long", 2));
    ADD_FAILURE() << "a path of a million seconds was accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "options.planner");
    EXPECT_NE(e.problem().find("a control lasts at most 15 steps"), std::string::npos)
        << e.problem();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  char folder[] = "/tmp/marionette-fifo-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string fifo = std::string(folder) + "/plugin.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    loadPlannerPlugin(fifo);  // (before the fix: blocked for ever in dlopen's open)
    ADD_FAILURE() << "a FIFO was loaded";
  } catch (const FieldError& e) {
    EXPECT_NE(e.problem().find("not a regular file"), std::string::npos) << e.problem();
  }
  ::unlink(fifo.c_str());
  ::rmdir(folder);
}

// Searches running at once take nothing of each other's seeds: each plan, made beside five
// others on other threads, is the plan it is alone.  (Every draw from OMPL's process-wide seed
// generator -- a planner's RNGs, the samplers', the random projection the space's setup makes --
// happens under one lock after the request's seed is set; a draw outside it would steal another
// search's seed only when it lands in that short window, so this test catches such a theft when
// it happens rather than every time.)
TEST(SearchSeeds, ConcurrentSearchesGiveTheirSequentialPlans) {
  registerOutsidePlanners();
  const std::vector<std::pair<std::string, unsigned long>> runs = {
      {"est", 1}, {"kpiece", 2}, {"rrt", 3}, {"outside-syclop", 4}, {"sst", 5}, {"pdst", 6}};
  std::vector<Plan> alone;
  for (const auto& [planner, seed] : runs) alone.push_back(planMotion(planarArmRequest(planner, seed)));
  for (int round = 0; round < 3; ++round) {
    std::vector<Plan> together(runs.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < runs.size(); ++i)
      threads.emplace_back([&, i] {
        together[i] = planMotion(planarArmRequest(runs[i].first, runs[i].second));
      });
    for (std::thread& t : threads) t.join();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      SCOPED_TRACE(runs[i].first);
      ASSERT_EQ(together[i].samples(), alone[i].samples());
      EXPECT_EQ((together[i].inputs - alone[i].inputs).cwiseAbs().maxCoeff(), 0.0);
      EXPECT_EQ(together[i].stats.propagations, alone[i].stats.propagations);
    }
  }
}
