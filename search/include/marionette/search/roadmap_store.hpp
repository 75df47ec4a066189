// SPDX-License-Identifier: BSD-3-Clause
// Where rest-pose roadmaps are kept between plans: whoever answers many plans (a server, a CLI
// process, a benchmark) passes one in with each request; the planner asks it for the roadmap
// and tells it the edge verdicts a query found.  The project's store, in memory and on disk
// (a folder shared by servers, with file locks), is marionette::roadmap_store's RoadmapCache.
//
// Contents
//   RoadmapStore   get(): the roadmap for (collision model, options), built if need be;
//                  remember(): keep what a query found.
#pragma once

#include <functional>
#include <memory>

#include "marionette/environments/collision.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/search/roadmap_options.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

class RestPoseRoadmap;

class RoadmapStore {
 public:
  virtual ~RoadmapStore() = default;

  struct Lookup {
    std::shared_ptr<RestPoseRoadmap> roadmap;
    bool built = false;  // by this call (its build time is roadmap->buildTime_s())
  };
  using BuildProgressFn = std::function<void(int vertices, double elapsed_s)>;
  // The roadmap for (collision, options), built (RestPoseRoadmap::build) when the store has
  // none.  Concurrent calls may share it: queries on one roadmap are thread-safe.  Throws
  // PlanCancelled when `cancelled` said stop, and what build throws.
  virtual Lookup get(const CollisionModelPtr& collision, const RoadmapOptions& options,
                     const BuildProgressFn& progress = {}, const CancelFn& cancelled = {}) = 0;
  // Called after a query found edge verdicts (they are already in `roadmap`): a store that
  // keeps roadmaps on disk writes them back.
  virtual void remember(RestPoseRoadmap& roadmap) = 0;
};

}  // namespace marionette

#pragma GCC visibility pop
