// SPDX-License-Identifier: BSD-3-Clause
#include "listings.hpp"

#include "marionette/common/json_text.hpp"
#include "marionette/common/text.hpp"

namespace marionette::cli {
namespace {

// [\n  {...},\n  {...}\n]: each item's members on one line.
template <class Item, class Members>
void printJsonList(const std::vector<Item>& items, std::ostream& os, Members members) {
  os << "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) {
    JsonLine item(os << "  ", i + 1 < items.size() ? ",\n" : "\n");
    members(items[i], item.members);
  }
  os << "]\n";
}

}  // namespace

void printModels(const std::vector<ModelListing>& models, bool json, std::ostream& os) {
  if (json)
    return printJsonList(models, os, [](const ModelListing& m, JsonMembers& out) {
      out.text("name", m.name);
      out.text("description", m.description);
      out.names("dynamic", m.dynamic);
      out.names("kinematic", m.kinematic);
      out.names("strings", m.strings);
      out.names("points", m.points);
    });
  for (const ModelListing& m : models)
    os << formatted("%-16s %2zu dynamic, %2zu kinematic, %2zu strings  %s", m.name.c_str(),
                    m.dynamic.size(), m.kinematic.size(), m.strings.size(), m.description.c_str())
       << "\n";
}

void printScenes(const std::vector<SceneListing>& scenes, bool json, std::ostream& os) {
  if (json)
    return printJsonList(scenes, os, [](const SceneListing& s, JsonMembers& out) {
      out.text("name", s.name);
      out.text("description", s.description);
      out.names("obstacles", s.obstacles);
      out.key("triangles") << s.triangles;
      if (!s.bounds_m) {
        out.key("bounds") << "null";
        return;
      }
      JsonLine bounds(out.key("bounds"), "");
      bounds.members.numbers("min", s.bounds_m->first.data(), 3);
      bounds.members.numbers("max", s.bounds_m->second.data(), 3);
    });
  for (const SceneListing& s : scenes)
    os << formatted("%-12s %2zu obstacles, %6lld triangles  %s", s.name.c_str(), s.obstacles.size(),
                    s.triangles, s.description.c_str())
       << "\n";
}

}  // namespace marionette::cli
