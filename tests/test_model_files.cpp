// Model files: every built-in loads; bad files get an error naming file, line and field.
#include <gtest/gtest.h>

#include "marionette/models/model_io.hpp"

namespace marionette {
namespace {

TEST(ModelFiles, BuiltinsLoad) {
  const auto names = builtinModelNames();
  EXPECT_FALSE(names.empty());
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    const ModelPtr m = loadModel(n);
    EXPECT_EQ(m->name, n);
    EXPECT_GT(m->nd(), 0);
    EXPECT_GT(m->nstrings(), 0);
  }
}

}  // namespace
}  // namespace marionette
