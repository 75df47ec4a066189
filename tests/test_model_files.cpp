// SPDX-License-Identifier: BSD-3-Clause
// Model files: every built-in loads and matches what its paper specifies; bad files get an error
// that names the file, the line and the field, and never a crash or a half-built model.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette {
namespace {

TEST(ModelFiles, BuiltinsHaveTheirDocumentedVariablesStringsAndSizes) {
  struct Expect {
    const char* name;
    int nd, nk, ns;
  };
  // planar-arm, suspended-mass: docs/design.md; arm3d: Johnson & Murphey, ICRA 2007 §VII (4 + 3);
  // marionette25: Johnson & Murphey, ICRA 2007 §V (25 dynamic, 7 strings moved in a plane and wound
  // = 21 kinematic); puppetcopter: the 15 joints of Egger, BSc thesis, ETH Zurich 2013 plus the
  // free body's 5, 12 rig inputs, 9 strings.
  const Expect expected[] = {{"arm3d", 4, 3, 1},
                             {"marionette25", 25, 21, 7},
                             {"planar-arm", 2, 2, 1},
                             {"puppetcopter", 20, 12, 9},
                             {"suspended-mass", 2, 2, 1}};
  ASSERT_EQ(builtinModelNames().size(), std::size(expected));
  for (const Expect& e : expected) {
    SCOPED_TRACE(e.name);
    const ModelPtr m = loadModel(e.name);
    EXPECT_EQ(m->name, e.name);
    EXPECT_EQ(m->nd(), e.nd);
    EXPECT_EQ(m->nk(), e.nk);
    EXPECT_EQ(m->nstrings(), e.ns);
  }
  const ModelPtr sm = loadModel("suspended-mass");
  EXPECT_EQ(sm->variableIndex("xm"), 0);
  EXPECT_EQ(sm->variableIndex("zm"), 1);
  EXPECT_EQ(sm->variableName(2), "xr");
  EXPECT_EQ(sm->variableName(3), "r");
  const ModelPtr pa = loadModel("planar-arm");
  EXPECT_EQ(pa->variableName(0), "theta1");
  EXPECT_EQ(pa->variableName(1), "theta2");
  EXPECT_EQ(pa->variableName(2), "x");
  EXPECT_EQ(pa->variableName(3), "L");
  EXPECT_GE(loadModel("arm3d")->pointIndex("hand"), 0);
  // PuppetCopter: Egger, BSc thesis, ETH Zurich 2013 eq. (2.3)'s joints all present, Appendix A's
  // masses.
  const ModelPtr pc = loadModel("puppetcopter");
  for (const char* j :
       {"beta_body", "beta_leg_l_1", "beta_leg_l_2", "beta_leg_r_1", "beta_leg_r_2",
        "alpha_arm_l_1", "beta_arm_l_1", "gamma_arm_l_1", "gamma_arm_l_2", "alpha_arm_r_1",
        "beta_arm_r_1", "gamma_arm_r_1", "gamma_arm_r_2", "alpha_head", "beta_head"})
    EXPECT_GE(pc->variableIndex(j), 0) << j;
  double total = 0.0;
  for (const Mass& ms : pc->masses) total += ms.mass_kg;
  EXPECT_NEAR(total, 0.15394 + 2 * (0.01093 + 0.01141 + 0.00473 + 0.01260) + 0.02708, 1e-12);
  const Mass& body = pc->masses[0];
  EXPECT_NEAR(body.inertia_kgm2(0, 2), -26.183e-6, 1e-15);  // a product of inertia, kept
}

// Loads `text` expecting a ModelError; returns it.
ModelError loadError(const std::string& text) {
  try {
    loadModelString(text, "bad.yaml");
  } catch (const ModelError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return ModelError("", 0, "", "");
}

// A small valid model; each test breaks one line of it.
const char* kGood = R"(name: pendulum
dynamic:
  - {name: theta}
kinematic:
  - {name: len, default: 0.5, range: [0.1, 1.0]}
frames:
  - {name: link, parent: world, ry: theta}
masses:
  - {frame: link, mass: 0.2, com: [0, 0, -0.3], inertia: {ixx: 1e-3, iyy: 1e-3, izz: 1e-5}}
strings:
  - {name: s, puppet: {frame: link, at: [0, 0, -0.3]}, rig: {frame: world, at: [0, 0, 0.2]}, length: len}
)";

std::string replaced(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

void expectError(const ModelError& e, int line, const std::string& field_part,
                 const std::string& message_part) {
  EXPECT_EQ(e.file(), "bad.yaml");
  EXPECT_EQ(e.line(), line) << e.what();
  EXPECT_NE(e.field().find(field_part), std::string::npos) << e.what();
  EXPECT_NE(e.message().find(message_part), std::string::npos) << e.what();
  const std::string what = e.what();
  const std::string where = line > 0 ? "bad.yaml:" + std::to_string(line) + ": " : "bad.yaml: ";
  EXPECT_EQ(what.rfind(where, 0), 0u) << what;
}

TEST(ModelFiles, TheGoodModelLoads) {
  EXPECT_EQ(loadModelString(kGood, "good.yaml")->nd(), 1);
}

// Inputs whose limits make every motion longer than kMaxMove_s (a 1 mm/s winch: hour-long moves
// built sample by sample pinned the planners) are refused, naming the limit; a slow input that
// crosses its range in minutes loads.
TEST(ModelFiles, InputsTooSlowForTheirRangeAreRefused) {
  for (const char* speed : {"1e-6", "1e-5", "1e-3"})
    expectError(loadError(replaced("range: [0.1, 1.0]}",
                                   std::string("range: [0.1, 1.0], max_speed: ") + speed + "}")),
                5, "kinematic[0].max_speed", "a move may take at most 600 s");
  expectError(loadError(replaced("range: [0.1, 1.0]}", "range: [0.1, 1.0], max_accel: 1e-9}")),
              5, "kinematic[0].max_accel", "at most 600 s");
  expectError(loadError(replaced("range: [0.1, 1.0]}",
                                 "range: [0.1, 1.0], max_speed: 1, max_accel: 1e-3}")),
              5, "kinematic[0].max_accel", "at most 600 s");
  EXPECT_EQ(loadModelString(replaced("range: [0.1, 1.0]}", "range: [0.1, 1.0], max_speed: 1e-2}"),
                            "slow.yaml")
                ->nk(),
            1);  // 169 s across its range
}

// One line of the good model broken at a time: each mistake is named with its line, its field
// and the problem.
TEST(ModelFiles, EachMistakeNamesItsLineFieldAndProblem) {
  struct Mistake {
    const char *from, *to;
    int line;
    const char *field, *message;
  };
  const Mistake mistakes[] = {
      {"parent: world", "parent: torso", 7, "frames[0]",
       "parent frame 'torso' of frame 'link' does not exist"},
      {"ry: theta", "spin: theta", 7, "frames[0].spin", "unknown key 'spin'"},
      {"mass: 0.2", "mass: -0.2", 9, "masses[0]", "mass must be > 0 kg (got -0.2"},
      {"izz: 1e-5", "izz: -1e-5", 9, "masses[0]", "inertia is not positive definite"},
      {"ixx: 1e-3, iyy: 1e-3, izz: 1e-5", "ixx: 1e-3, iyy: 1e-5, izz: 1e-5", 9, "masses[0]",
       "triangle inequality"},
      {"puppet: {frame: link,", "puppet: {frame: hand,", 11, "strings[0]",
       "string 's' puppet frame 'hand' does not exist"},
      {"{name: theta}", "{name: theta, spring: {stiffness: -0.1}}", 3, "dynamic[0]",
       "spring: stiffness must be finite and >= 0"},
      {"{name: theta}", "{name: theta, spring: {stiff: 0.1}}", 3, "dynamic[0].spring.stiff",
       "unknown key 'stiff'"},
      {"{name: theta}", "{name: theta, spring: 0.1}", 3, "dynamic[0].spring",
       "expected a mapping"},
  };
  for (const Mistake& m : mistakes) {
    SCOPED_TRACE(std::string(m.from) + " -> " + m.to);
    expectError(loadError(replaced(m.from, m.to)), m.line, m.field, m.message);
  }
}

TEST(ModelFiles, DuplicateNames) {
  // A second frame called "link".
  expectError(loadError(replaced("masses:", "  - {name: link, parent: link, tz: -0.3}\nmasses:")),
              8, "frames[1]", "duplicate frame name 'link'");
  // A kinematic variable with a dynamic variable's name.
  expectError(loadError(replaced("name: len, default", "name: theta, default")), 5, "kinematic[0]",
              "duplicate variable name 'theta'");
}

TEST(ModelFiles, OtherMistakesNameTheirField) {
  expectError(loadError(replaced("mass: 0.2", "mass: heavy")), 9, "masses[0].mass",
              "expected a finite number (got 'heavy')");
  expectError(loadError(replaced("com: [0, 0, -0.3]", "com: [0, -0.3]")), 9, "masses[0].com",
              "expected a list of 3 numbers");
  expectError(loadError(replaced("ry: theta", "ry: phi")), 7, "frames[0]",
              "unknown variable 'phi'");
  expectError(loadError(replaced("length: len", "length: theta")), 11, "strings[0]",
              "is dynamic; a string length is a kinematic variable or a constant");
  expectError(loadError(replaced("default: 0.5", "default: 2.0")), 5, "kinematic[0]",
              "outside the range");
  // A mass moved by a rig coordinate would make the rig massive.
  expectError(loadError(replaced("  - {name: link, parent: world, ry: theta}",
                                 "  - {name: cart, parent: world, tx: len}\n"
                                 "  - {name: link, parent: cart, ry: theta}")),
              10, "masses[0]", "moved by kinematic variable 'len'");
  // YAML syntax.
  const ModelError syntax = loadError(replaced("- {name: theta}", "- {name: theta"));
  EXPECT_EQ(syntax.file(), "bad.yaml");
  EXPECT_GT(syntax.line(), 0);
  EXPECT_NE(std::string(syntax.what()).find("YAML syntax error"), std::string::npos);
}

// Coordinates and sizes beyond the stage's range (kStageRange_m) and gravity beyond
// kMaxGravity_mps2 are refused at load: far out, FCL's GJK asserts and Newton loses its scale.
TEST(ModelFiles, ValuesBeyondTheStagesRangeAreRefused) {
  expectError(loadError(replaced("com: [0, 0, -0.3]", "com: [1e200, 0, -0.3]")), 9, "masses[0]",
              "beyond the stage's range");
  expectError(loadError(replaced("at: [0, 0, 0.2]", "at: [0, 0, 2e3]")), 11, "strings[0]",
              "rig point: coordinate z = 2000 m is beyond");
  expectError(loadError(replaced("default: 0.5, range: [0.1, 1.0]", "default: 1e-300")), 11,
              "strings[0]", "the default of its length variable must be between 1e-06 and 1000 m");
  expectError(loadError("gravity: 1e300\n" + std::string(kGood)), 0, "gravity",
              "must be between 0 and 1000 m/s^2");
  expectError(loadError(replaced("  - {name: link, parent: world, ry: theta}",
                                 "  - {name: far, parent: world, ty: 1e250}\n"
                                 "  - {name: link, parent: far, ry: theta}")),
              7, "frames[0]", "coordinate y = 1e+250 m");
}

// Mutated built-in model files crashed `simulate` (119 of 7,500 did): a file truncated before
// its dynamic variables built a model with none.  Every prefix of every built-in, cut at a line,
// is now refused with a ModelError or simulates a few steps (or fails with a SimulationError).
TEST(ModelFiles, EveryTruncationOfABuiltinIsRefusedOrSimulates) {
  expectError(loadError("name: x\n"), 0, "dynamic", "at least one dynamic variable");
  int loaded = 0, refused = 0;
  for (const std::string& name : builtinModelNames()) {
    const std::string text = builtinModelText(name);
    for (std::size_t end = text.find('\n'); end != std::string::npos;
         end = text.find('\n', end + 1)) {
      ModelPtr model;
      try {
        model = loadModelString(text.substr(0, end + 1), name + "-prefix.yaml");
      } catch (const ModelError&) {
        ++refused;
        continue;
      }
      ++loaded;
      SimulationOptions options;
      options.duration_s = 0.03;
      try {
        simulate(model, InputSchedule::constant(*model), options);
      } catch (const SimulationError&) {
      }
    }
  }
  EXPECT_GT(loaded, 5);
  EXPECT_GT(refused, 100);
}

// yaml-cpp keeps the first of two equal keys silently (`gravity: 9.81` then `gravity: 1.0`
// simulated 9.81) and reads the first of several documents: both are refused, naming the line.
// A UTF-8 byte-order mark is not part of the document.
TEST(ModelFiles, DuplicateKeysAndExtraDocumentsAreRefusedAByteOrderMarkIsNot) {
  expectError(loadError(std::string(kGood) + "gravity: 1.0\ngravity: 9.81\n"), 13, "gravity",
              "duplicate key 'gravity'");
  expectError(loadError(replaced("{name: theta}", "{name: theta, name: phi}")), 3,
              "dynamic[0].name", "duplicate key 'name'");
  expectError(loadError(std::string(kGood) + "---\nname: second\n"), 12, "",
              "a second YAML document");
  EXPECT_EQ(loadModelString("\xEF\xBB\xBF" + std::string(kGood), "bom.yaml")->nd(), 1);
  // A ',' where a document starts made yaml-cpp's LoadAll loop for ever (found by fuzzing).
  for (const char* text : {",", "# comment\n,x", "a: b\n---\n,"}) {
    SCOPED_TRACE(text);
    EXPECT_THROW(loadModelString(text, "comma.yaml"), ModelError);
  }
  // Aliases that expand exponentially ("billion laughs") are refused, not walked.
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 12; ++i)
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" +
              std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" +
              std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  // An alias inside its own anchor made the walk recurse until the stack overflowed.
  for (const char* cycle : {"a: &a [*a]\n", "a: &a {b: *a}\n"}) {
    const ModelError e = loadError(cycle);
    EXPECT_NE(e.message().find("refers to itself"), std::string::npos) << e.what();
  }
  const ModelError bomb = loadError(laughs);
  EXPECT_NE(bomb.message().find("too many nodes"), std::string::npos) << bomb.what();
}

// The rules of an input schedule are one check (InputSchedule::problem) that the CSV reader and
// the service's request decoding both apply: the CLI said 0 in-process and 2 with --server for a
// CSV whose first time is 0.5.
TEST(InputFiles, ACsvIsCheckedByTheScheduleRulesAndMayStartWithAByteOrderMark) {
  const ModelPtr arm = loadModel("planar-arm");
  const InputSchedule late = InputSchedule::fromCsv(*arm, "t,x\n0.5,0.3\n1,0.4\n", "late.csv");
  EXPECT_FALSE(late.problem(*arm));
  EXPECT_DOUBLE_EQ(late.at(0.0)[0], 0.3);  // held before the first row
  const InputSchedule bom = InputSchedule::fromCsv(*arm, "\xEF\xBB\xBFt,x\n0,0.3\n", "bom.csv");
  EXPECT_EQ(bom.times_s.size(), 1u);
  const std::pair<const char*, const char*> bad[] = {
      {"t,x\n-1,0.3\n", "bad.csv:2: column 't': times start at 0 or later (got -1)"},
      {"t,x\n0,0.3\n# a comment\n0,0.4\n",
       "bad.csv:4: column 't': times must increase (0 after 0)"},
      {"t,x\n0,0.3\n1,0.9\n",
       "bad.csv:3: column 'x': 0.9 is outside the actuator range [-0.4, 0.6]"},
      {"t,x\n", "bad.csv:1: no data rows"},
  };
  for (const auto& [csv, message] : bad) {
    try {
      InputSchedule::fromCsv(*arm, csv, "bad.csv");
      ADD_FAILURE() << csv;
    } catch (const InputsFileError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  InputSchedule direct = InputSchedule::constant(*arm);
  EXPECT_EQ(direct.problem(*arm)->message, "no samples");
  direct.times_s = {0.0, 1.0};
  direct.values = Eigen::MatrixXd::Constant(2, 2, 0.3);
  direct.values(1, 1) = std::nan("");
  const auto p = direct.problem(*arm);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->row, 1);
  EXPECT_EQ(p->variable, 1);
}

TEST(ModelFiles, FileErrorsNameThePath) {
  const std::string path = ::testing::TempDir() + "/broken-model.yaml";
  {
    std::ofstream out(path);
    out << replaced("mass: 0.2", "mass: 0");
  }
  try {
    loadModel(path);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 9);
  }
  std::remove(path.c_str());
  try {
    loadModel("no-such-model");
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("not a built-in (arm3d, marionette25"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace marionette
