// SPDX-License-Identifier: BSD-3-Clause
// The rest-pose roadmap (search/roadmap.hpp) and where roadmaps are kept (RoadmapCache,
// roadmap_store/roadmap_cache.hpp): saved and loaded files, edge verdicts written back, one
// build for concurrent requests, fingerprints, a folder's bad and hostile files, servers
// sharing a folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "marionette/common/files.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/roadmap_store/roadmap_cache.hpp"
#include "marionette/search/roadmap.hpp"
#include "support/test_plans.hpp"
#include "support/test_paths.hpp"

using namespace marionette;
using marionette::testing::planRequest;
using marionette::testing::restValue;

namespace {

// A roadmap small enough to build in a test: 40 vertices, the other options as they come.
RoadmapOptions smallRoadmap() {
  RoadmapOptions options;
  options.vertices = 40;
  return options;
}

}  // namespace

TEST(Roadmap, SavedAndLoadedRoadmapsAnswerTheSameAndRefuseAnotherScene) {
  const std::string path = test::scratchDir("planner") + "/arm.roadmap";
  std::remove(path.c_str());
  const ModelPtr model = loadModel("planar-arm");
  const std::string goal = "q:theta1=" + std::to_string(restValue(model, "theta1") + 0.3);
  PlanRequest req = planRequest("planar-arm", "empty", "prm", goal);
  req.options.roadmap.vertices = 60;
  RoadmapCacheOptions file;
  file.file = path;
  RoadmapCache first(file);
  req.roadmaps = &first;
  const Plan built = planMotion(req);
  ASSERT_TRUE(std::ifstream(path).good());
  RoadmapCache second(file);  // another process, say: the roadmap comes from the file
  req.roadmaps = &second;
  const Plan loaded = planMotion(req);
  EXPECT_EQ(loaded.stats.roadmap_build_time_s, 0.0);
  EXPECT_EQ(loaded.stats.roadmap_vertices, 60);
  ASSERT_EQ(built.samples(), loaded.samples());
  EXPECT_LT((built.inputs - loaded.inputs).cwiseAbs().maxCoeff(), 1e-12);
  // The same file for another scene: refused, naming the file.
  auto other = std::make_shared<CollisionModel>(model, loadScene("pillars"));
  RoadmapOptions options = req.options.roadmap;
  options.step_s = req.options.step_s;
  try {
    RestPoseRoadmap::load(path, other, options);
    FAIL() << "loaded a roadmap built for another scene";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  // A truncated file: an error naming the line.
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(path) << text.substr(0, text.size() / 2);
  EXPECT_THROW(RestPoseRoadmap::load(
                   path, std::make_shared<CollisionModel>(model, loadScene("empty")), options),
               std::runtime_error);
}


TEST(Roadmap, TheSameSeedOnAFreshCacheGivesTheSamePlan) {
  const ModelPtr model = loadModel("planar-arm");
  const std::string goal = "q:theta1=" + std::to_string(restValue(model, "theta1") + 0.4);
  PlanRequest req = planRequest("planar-arm", "empty", "prm", goal, 600.0, 5);
  req.options.roadmap.vertices = 40;
  RoadmapCache a, b;
  req.roadmaps = &a;
  const Plan first = planMotion(req);
  ASSERT_EQ(first.outcome, PlanOutcome::Exact) << first.message;
  EXPECT_GT(first.stats.roadmap_build_time_s, 0.0);
  req.roadmaps = &b;
  const Plan second = planMotion(req);
  ASSERT_EQ(first.samples(), second.samples());
  EXPECT_EQ((first.inputs - second.inputs).cwiseAbs().maxCoeff(), 0.0);
  // The same cache again: no build, the same plan; the roadmap's own edges on the path were
  // checked by the first query and are not simulated again (only those to the start and goal
  // vertices a query adds for itself are).
  req.roadmaps = &a;
  const Plan again = planMotion(req);
  EXPECT_EQ(again.stats.roadmap_build_time_s, 0.0);
  EXPECT_LE(again.stats.edges_validated, first.stats.edges_validated);
  ASSERT_EQ(first.samples(), again.samples());
  EXPECT_EQ((first.inputs - again.inputs).cwiseAbs().maxCoeff(), 0.0);
}

// What a query writes back: the verdicts of the roadmap's own edges it simulated.  A second
// query on the same roadmap simulates none of them again -- only edges to the vertices a query
// adds for itself (its start and goal), which no query remembers, and roadmap edges still
// unchecked: a valid verdict carries the edge's true duration, settling included, which may make
// a path of unchecked edges (costed at their lower bound) the cheaper one to try next time.
TEST(Roadmap, AQueryWritesBackEdgeVerdictsAndTheNextSimulatesNoneOfThemAgain) {
  const ModelPtr model = loadModel("puppetcopter");
  const auto collision = std::make_shared<CollisionModel>(model, loadScene("table"));
  const RoadmapOptions options = smallRoadmap();
  const auto roadmap = RestPoseRoadmap::build(collision, options);
  const Eigen::VectorXd rho = model->defaultInputs();
  const RestPose rest = computeRestPose(model, rho);
  const Eigen::VectorXd still = Eigen::VectorXd::Zero(model->nd());
  GoalEvaluator goal(model, GoalSpec::parse("point:hand_l=0.05,0.24,0.40;radius=0.04"));
  auto unknownEdges = [&] {
    int n = 0;
    for (const auto& e : roadmap->edges()) n += e.state == RestPoseRoadmap::EdgeState::Unknown;
    return n;
  };
  const int unknown_before = unknownEdges();
  const RestPoseRoadmap::QueryResult first = roadmap->query(rest.q, still, rho, goal, 30.0, 1);
  ASSERT_TRUE(first.found) << first.message;
  // The path's pairs of the roadmap's own vertices (a query's own vertices are negative).
  std::vector<std::pair<int, int>> own;
  for (std::size_t k = 0; k + 1 < first.path.size(); ++k)
    if (first.path[k] >= 0 && first.path[k + 1] >= 0)
      own.emplace_back(first.path[k], first.path[k + 1]);
  ASSERT_FALSE(own.empty()) << "a path through the roadmap was expected";
  const int unknown_after_first = unknownEdges();
  EXPECT_GT(first.roadmap_edges_validated, 0);
  EXPECT_EQ(unknown_after_first, unknown_before - first.roadmap_edges_validated);  // all kept
  std::vector<RestPoseRoadmap::EdgeState> verdicts;
  for (const auto& e : roadmap->edges()) {
    verdicts.push_back(e.state);
    if (std::find(own.begin(), own.end(), std::make_pair(e.from, e.to)) != own.end()) {
      EXPECT_EQ(e.state, RestPoseRoadmap::EdgeState::Valid) << e.from << " -> " << e.to;
    }
  }
  const RestPoseRoadmap::QueryResult second = roadmap->query(rest.q, still, rho, goal, 30.0, 1);
  ASSERT_TRUE(second.found) << second.message;
  // Every roadmap edge the second query simulated was unchecked (each one it simulated took an
  // edge out of the unknown ones), and every verdict of the first stands.
  EXPECT_EQ(unknownEdges(), unknown_after_first - second.roadmap_edges_validated);
  std::size_t i = 0;
  for (const auto& e : roadmap->edges()) {
    if (verdicts[i] != RestPoseRoadmap::EdgeState::Unknown) {
      EXPECT_EQ(e.state, verdicts[i]) << e.from << " -> " << e.to;
    }
    ++i;
  }
}

TEST(Roadmap, TwoRequestsThatMissTheCacheAtOnceShareOneBuild) {
  const ModelPtr model = loadModel("planar-arm");
  const auto collision = std::make_shared<CollisionModel>(model, loadScene("empty"));
  const RoadmapOptions options = smallRoadmap();
  RoadmapCache cache;
  RoadmapCache::Lookup results[2];
  std::thread other([&] { results[1] = cache.get(collision, options); });
  results[0] = cache.get(collision, options);
  other.join();
  EXPECT_EQ(results[0].roadmap, results[1].roadmap);
  EXPECT_EQ(int(results[0].built) + int(results[1].built), 1);
  EXPECT_EQ(cache.size(), 1u);
  // A waiter whose own request is cancelled stops waiting, and a cancelled build leaves
  // nothing behind.
  RoadmapOptions slow = options;
  slow.seed = 7;
  slow.vertices = 100000;
  std::atomic<bool> stop_builder{false};
  std::thread builder([&] {
    EXPECT_THROW(cache.get(collision, slow, {}, [&] { return stop_builder.load(); }),
                 PlanCancelled);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_THROW(cache.get(collision, slow, {}, [] { return true; }), PlanCancelled);
  stop_builder = true;
  builder.join();
  EXPECT_EQ(cache.size(), 1u);
}

// The fingerprint covers everything a roadmap depends on: change any of it and a saved roadmap
// is refused (and a roadmap folder's file name changes with it).
TEST(Roadmap, AnyChangeToModelSceneOrOptionsRefusesASavedRoadmap) {
  const ModelPtr model = loadModel("puppetcopter");
  const ScenePtr scene = loadScene("table");
  auto collision = std::make_shared<CollisionModel>(model, scene);
  RoadmapOptions options;
  options.vertices = 3;
  options.build_time_limit_s = 5;
  const std::string path = test::scratchDir("planner") + "/fingerprint.roadmap";
  RestPoseRoadmap::build(collision, options)->save(path);
  ASSERT_NO_THROW(RestPoseRoadmap::load(path, collision, options));
  const std::string base = RestPoseRoadmap::fingerprint(*collision, options);
  EXPECT_EQ(base.size(), 32u);
  auto refused = [&](const ModelPtr& m, const ScenePtr& s, const RoadmapOptions& o,
                     const char* what) {
    auto c = std::make_shared<CollisionModel>(m, s);
    EXPECT_NE(RestPoseRoadmap::fingerprint(*c, o), base) << what;
    EXPECT_THROW(RestPoseRoadmap::load(path, c, o), RoadmapFileError) << what;
  };
  auto changed = [&](auto&& change) {
    auto m = std::make_shared<Model>(*model);
    change(*m);
    return ModelPtr(m);
  };
  refused(changed([](Model& m) {
            m.masses[0].inertia_kgm2(0, 1) += 1e-7;  // a product of inertia
            m.masses[0].inertia_kgm2(1, 0) += 1e-7;
          }),
          scene, options, "product of inertia");
  refused(changed([](Model& m) { m.points[0].position_m.x() += 1e-6; }), scene, options,
          "named point");
  refused(changed([](Model& m) { m.dynamic[0].limit.softening *= 1.01; }), scene, options,
          "joint-limit softening");
  refused(changed([](Model& m) { m.kinematic[0].default_value += 1e-6; }), scene, options,
          "kinematic default");
  refused(changed([](Model& m) { m.dynamic[0].initial += 1e-6; }), scene, options, "initial guess");
  auto moved = std::make_shared<Scene>(*scene);
  moved->obstacles[0].pose.translation().x() += 1e-6;
  refused(model, moved, options, "an obstacle moved");
  RoadmapOptions other = options;
  other.settle_tolerance *= 1.01;
  refused(model, scene, other, "roadmap options");
  // What the edges touch: the floor's friction, the links' own, touching at all.
  auto slippery = std::make_shared<Scene>(*scene);
  for (Obstacle& o : slippery->obstacles) o.friction *= 0.5;
  refused(model, slippery, options, "the floor's friction");
  refused(changed([](Model& m) { m.self_contact.friction *= 0.5; }), scene, options,
          "the links' friction");
  CollisionOptions touching;
  touching.touch_contact_surfaces = true;
  EXPECT_NE(RestPoseRoadmap::fingerprint(CollisionModel(model, scene, touching), options), base)
      << "touching the floor";

  // A mesh link counts by its triangles, not by its file's name: the same mesh in another folder
  // fits, a vertex moved by a micrometre does not.
  const std::string dir = test::scratchDir("planner");
  auto writeTetrahedron = [&](const std::string& file, double tip_z) {
    std::ofstream(file) << "v 0 0 0\nv 0.02 0 0\nv 0 0.02 0\nv 0 0 " << tip_z
                        << "\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";
  };
  auto withMesh = [&](const std::string& file) {
    return changed([&](Model& m) {
      m.geometry[0].shape = Shape{};
      m.geometry[0].shape.type = ShapeType::Mesh;
      m.geometry[0].shape.mesh_path = file;
    });
  };
  auto fingerprintOf = [&](const ModelPtr& m) {
    return RestPoseRoadmap::fingerprint(CollisionModel(m, scene), options);
  };
  writeTetrahedron(dir + "/link.obj", 0.02);
  writeTetrahedron(dir + "/copy-of-link.obj", 0.02);
  writeTetrahedron(dir + "/moved-link.obj", 0.020001);
  const std::string with_mesh = fingerprintOf(withMesh(dir + "/link.obj"));
  EXPECT_NE(with_mesh, base);
  EXPECT_EQ(fingerprintOf(withMesh(dir + "/copy-of-link.obj")), with_mesh);
  EXPECT_NE(fingerprintOf(withMesh(dir + "/moved-link.obj")), with_mesh);
}

// Every OMPL parameter of every tree planner has its range checked (OMPL checks none): values
// that returned INTERNAL (nan, inf, text, 1e400, kpiece's border_fraction = 5 and
// bad_score_factor = 0) or were taken silently (goal_bias = 2 or -1, est's range = -1) are
// FieldErrors naming the parameter; each planner's defaults pass.


// A roadmap folder holding the planar arm's small roadmap (a folder of each test's own), and
// what the caches tell of its files.
class RoadmapFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    static int folders = 0;  // short names: a socket's path in it must fit in 108 bytes
    dir = test::scratchDir("roadmaps-" + std::to_string(++folders));
    options.vertices = 4;
    options.build_time_limit_s = 5;
    cache_options.directory = dir;
    cache_options.on_file_problem = [this](const std::string& m) { told.push_back(m); };
    path = RoadmapCache(cache_options).pathFor(RestPoseRoadmap::fingerprint(*collision, options));
    ASSERT_TRUE(RoadmapCache(cache_options).get(collision, options).built);
    good = readTextFile(path);
  }
  CollisionModelPtr collision =
      std::make_shared<CollisionModel>(loadModel("planar-arm"), loadScene("empty"));
  RoadmapOptions options;
  std::string dir;
  std::vector<std::string> told;
  RoadmapCacheOptions cache_options;
  std::string path;  // the roadmap's file
  std::string good;  // its text as built
};

TEST_F(RoadmapFolder, ABadFileIsSetAsideRebuiltAndReplaced) {
  RoadmapOptions other_options = options;
  other_options.vertices = 5;
  const std::string path_other =
      RoadmapCache(cache_options).pathFor(RestPoseRoadmap::fingerprint(*collision, other_options));
  RoadmapCache(cache_options).get(collision, other_options);

  std::string flipped = good;
  for (std::size_t i = 40; i < flipped.size(); i += 97) flipped[i] ^= 0x5a;
  std::string negative = good;
  const std::size_t edges = negative.find("edges ");
  ASSERT_NE(edges, std::string::npos);
  const std::size_t first_edge = negative.find('\n', edges) + 1;
  const std::size_t third_field = negative.find(' ', negative.find(' ', first_edge) + 1) + 1;
  negative.insert(third_field, "-");
  // One digit of a vertex changed: still a well-formed file, caught by its checksum alone.
  std::string digit = good;
  const std::size_t first_vertex = digit.find('\n', digit.find("vertices ")) + 1;
  const std::size_t some_digit = digit.find_first_of("123456789", first_vertex + 3);
  digit[some_digit] = digit[some_digit] == '9' ? '8' : char(digit[some_digit] + 1);
  const std::pair<const char*, std::function<void()>> damages[] = {
      {"a digit changed", [&] { std::ofstream(path) << digit; }},
      {"truncated", [&] { std::ofstream(path) << good.substr(0, good.size() / 2); }},
      {"bytes flipped", [&] { std::ofstream(path) << flipped; }},
      {"another roadmap's", [&] { std::ofstream(path) << readTextFile(path_other); }},
      {"a negative weight", [&] { std::ofstream(path) << negative; }},
      {"a directory",
       [&] {
         std::filesystem::remove(path);
         std::filesystem::create_directories(path + "/inside");
       }},
  };
  for (const auto& [what, damage] : damages) {
    SCOPED_TRACE(what);
    damage();
    told.clear();
    RoadmapCache cache(cache_options);
    RoadmapCache::Lookup found;
    ASSERT_NO_THROW(found = cache.get(collision, options));
    EXPECT_TRUE(found.built);
    ASSERT_EQ(told.size(), 1u);
    EXPECT_NE(told[0].find("set aside as " + path + ".bad-"), std::string::npos) << told[0];
    EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));  // replaced by a good one
  }
  int set_aside = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    set_aside += entry.path().string().find(".bad-") != std::string::npos;
  EXPECT_EQ(set_aside, 6);
  // Version 1, before checksums, is still read.
  std::string version1 = good.substr(0, good.rfind("checksum "));
  ASSERT_EQ(version1.rfind("marionette-roadmap 2\n", 0), 0u);
  version1[std::strlen("marionette-roadmap ")] = '1';
  std::ofstream(path) << version1;
  EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));


  // A folder that cannot be written: the roadmap is served from memory, the failure told.
  RoadmapCacheOptions unwritable = cache_options;
  unwritable.directory = dir + "/no/such/folder";
  told.clear();
  EXPECT_TRUE(RoadmapCache(unwritable).get(collision, options).built);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("roadmap not saved (kept in memory)"), std::string::npos) << told[0];

  RoadmapOptions nan_step = options;
  nan_step.step_s = std::nan("");
  try {
    RoadmapCache(cache_options).get(collision, nan_step);
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "options.roadmap.step_s");
  }
}

// Drops the calling thread's effective capabilities (capabilities are a thread's: the others
// keep theirs).  Root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH go with them, so file
// permissions then hold for this thread as for any user.  False when the kernel refused.
bool dropThisThreadsEffectiveCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  for (__user_cap_data_struct& d : data) d.effective = 0;
  return ::syscall(SYS_capset, &header, data) == 0;
}

// A regular file in the folder that cannot be opened (permissions) is not set aside: its
// content may be good.  Rebuilt, told, and replaced by the new one.  (Anything else that cannot
// be opened -- a socket, a FIFO -- is not a roadmap file and is set aside: the next test.)  Run
// on a thread without capabilities: as root too, the permissions stop its reads.
TEST_F(RoadmapFolder, ARoadmapFileThatCannotBeOpenedIsRebuiltNotSetAside) {
  std::filesystem::permissions(path, std::filesystem::perms::none);
  std::thread unprivileged([&] {
    ASSERT_TRUE(dropThisThreadsEffectiveCapabilities()) << std::strerror(errno);
    EXPECT_THROW(RestPoseRoadmap::load(path, collision, options), RoadmapFileUnreadable);
    EXPECT_TRUE(RoadmapCache(cache_options).get(collision, options).built);
    ASSERT_EQ(told.size(), 1u);
    EXPECT_NE(told[0].find("roadmap file not read"), std::string::npos) << told[0];
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      EXPECT_EQ(entry.path().string().find(".bad-"), std::string::npos) << entry.path();
    EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));
  });
  unprivileged.join();
}

// The folder turned against the server: a FIFO in a roadmap's place blocked its
// open() for ever; a roadmap linked to /dev/zero was read without bound, one linked to
// /etc/passwd read; a lock linked outside the folder made the server create that file; a sparse
// gigabyte was read whole.  Now nothing in the folder is followed or waited on, a file is read
// only if it is regular and no larger than such a roadmap can be, and each of these is set
// aside (the link itself renamed), rebuilt and replaced -- quickly, and leaving what the links
// named untouched.
TEST_F(RoadmapFolder, AHostileOneIsNeitherFollowedNorWaitedOnNorReadWithoutBound) {
  const std::string outside = test::scratchDir("hostile_outside");
  ASSERT_LT(good.size(), RestPoseRoadmap::maxFileBytes(collision->model(), options));
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");

  const std::string target = outside + "/made-by-the-server";
  const std::pair<const char*, std::function<void()>> hostile[] = {
      {"a FIFO", [&] { ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0); }},
      {"a socket",
       [&] {
         const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
         ASSERT_GE(fd, 0);
         sockaddr_un address{};
         address.sun_family = AF_UNIX;
         ASSERT_LT(path.size(), sizeof(address.sun_path));
         std::strcpy(address.sun_path, path.c_str());
         ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
         ::close(fd);
       }},
      {"a link to /dev/zero", [&] { std::filesystem::create_symlink("/dev/zero", path); }},
      {"a link to /etc/passwd", [&] { std::filesystem::create_symlink("/etc/passwd", path); }},
      {"a link to a good roadmap outside",
       [&] {
         std::ofstream(outside + "/good.roadmap") << good;
         std::filesystem::create_symlink(outside + "/good.roadmap", path);
       }},
      {"a sparse gigabyte",
       [&] {
         std::ofstream(path) << good;
         std::filesystem::resize_file(path, std::uintmax_t(1) << 30);
       }},
      {"a lock linked outside the folder",
       [&] {
         std::ofstream(path) << good;
         std::filesystem::create_symlink(target, path + ".lock");
       }},
      {"a FIFO as the lock",
       [&] {
         std::ofstream(path) << good;
         ASSERT_EQ(::mkfifo((path + ".lock").c_str(), 0644), 0);
       }},
  };
  for (const auto& [what, plant] : hostile) {
    SCOPED_TRACE(what);
    plant();
    told.clear();
    const auto t0 = std::chrono::steady_clock::now();
    RoadmapCache cache(cache_options);
    RoadmapCache::Lookup found;
    ASSERT_NO_THROW(found = cache.get(collision, options));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    const bool lock_planted = std::string(what).find("lock") != std::string::npos;
    // A hostile roadmap is set aside and rebuilt; a hostile lock is set aside, and the good
    // roadmap beside it loaded.
    EXPECT_EQ(found.built, !lock_planted);
    ASSERT_EQ(told.size(), 1u);
    EXPECT_NE(told[0].find("set aside as " + path + (lock_planted ? ".lock" : "") + ".bad-"),
              std::string::npos)
        << told[0];
    EXPECT_FALSE(std::filesystem::exists(target));
    // In place now: a regular roadmap file and a regular lock file of the folder's own.
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(path)));
    EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));
    cache.remember(*found.roadmap);  // a write-back takes the lock again
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(path + ".lock")));
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      std::filesystem::remove(entry.path());
  }
  EXPECT_EQ(readTextFile(outside + "/good.roadmap"), good);  // what a link named is untouched
  // Load (a caller's own file) refuses more bytes than such a roadmap takes, before reading.
  std::ofstream(path) << good;
  std::filesystem::resize_file(path, std::uintmax_t(1) << 30);
  EXPECT_THROW(RestPoseRoadmap::load(path, collision, options), RoadmapFileError);
}

// Servers sharing a roadmap folder (on NFS, say): one builds while the others wait for its lock
// and load its file; a write-back first takes over the verdicts already on disk, so none is lost
// to another server's write; a server takes up the verdicts others wrote when it next gets the
// roadmap; a waiter whose own request is cancelled stops waiting.
TEST(Roadmap, ServersSharingAFolderBuildOnceAndKeepEveryonesVerdicts) {
  const ModelPtr model = loadModel("puppetcopter");
  const auto collision = std::make_shared<CollisionModel>(model, loadScene("table"));
  const RoadmapOptions options = smallRoadmap();
  RoadmapCacheOptions folder;
  folder.directory = test::scratchDir("shared_roadmaps");
  std::filesystem::remove_all(folder.directory);
  std::filesystem::create_directories(folder.directory);
  RoadmapCache server_a(folder), server_b(folder), server_c(folder);
  RoadmapCache::Lookup a, b;
  std::thread other([&] { b = server_b.get(collision, options); });
  a = server_a.get(collision, options);
  other.join();
  const auto c = server_c.get(collision, options);
  EXPECT_FALSE(c.built);
  EXPECT_EQ(int(a.built) + int(b.built), 1) << "exactly one server builds";
  EXPECT_NE(a.roadmap, b.roadmap);  // two processes' own copies ...
  ASSERT_EQ(a.roadmap->vertices().size(), b.roadmap->vertices().size());  // ... of one roadmap
  for (std::size_t i = 0; i < a.roadmap->vertices().size(); ++i)
    EXPECT_EQ(a.roadmap->vertices()[i].rho, b.roadmap->vertices()[i].rho);

  const Eigen::VectorXd rho = model->defaultInputs();
  const RestPose rest = computeRestPose(model, rho);
  const Eigen::VectorXd still = Eigen::VectorXd::Zero(model->nd());
  using State = RestPoseRoadmap::EdgeState;
  auto checked = [](const RestPoseRoadmap& roadmap) {
    std::map<std::pair<int, int>, State> out;
    for (const auto& e : roadmap.edges())
      if (e.state != State::Unknown) out[{e.from, e.to}] = e.state;
    return out;
  };
  const auto built_with = checked(*b.roadmap);
  GoalEvaluator goal(model, GoalSpec::parse("point:hand_l=0.05,0.24,0.40;radius=0.04"));
  const auto r = a.roadmap->query(rest.q, still, rho, goal, 30.0, 1);
  ASSERT_TRUE(r.found) << r.message;
  EXPECT_GT(r.roadmap_edges_validated, 0);
  server_a.remember(*a.roadmap);
  const auto found_by_a = checked(*a.roadmap);
  ASSERT_GT(found_by_a.size(), built_with.size());
  // b has not seen a's verdicts: its write must not lose them (it takes them over first).
  EXPECT_EQ(checked(*b.roadmap), built_with);
  server_b.remember(*b.roadmap);
  const std::string path = server_a.pathFor(a.roadmap->fingerprintId());
  const auto on_disk = checked(*RestPoseRoadmap::load(path, collision, options));
  EXPECT_EQ(on_disk, found_by_a);
  EXPECT_EQ(checked(*b.roadmap), found_by_a);
  // A third server that loaded the roadmap before a's write takes a's verdicts up when it next
  // gets it (the file changed).
  EXPECT_EQ(checked(*c.roadmap), built_with);
  EXPECT_EQ(server_c.get(collision, options).roadmap, c.roadmap);
  EXPECT_EQ(checked(*c.roadmap), found_by_a);

  // Another server holds the lock (building, say): a request that needs the roadmap waits, and
  // stops waiting when it is cancelled; the holder's death (its descriptor closed) frees it.
  const int holder = ::open((path + ".lock").c_str(), O_RDWR);
  ASSERT_GE(holder, 0);
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(holder, F_OFD_SETLK, &whole), 0);
  std::filesystem::remove(path);  // to be built again, by whoever holds the lock
  RoadmapCache server_d(folder);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(
      server_d.get(
          collision, options, {},
          [&] { return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(200); }),
      PlanCancelled);
  ::close(holder);
  EXPECT_TRUE(server_d.get(collision, options).built);
}

// The one pipeline (server, CLI and benchmark): an exact plan is optimized and the gains are
// along what is returned; a plan that is not exact is not optimized.
