// SPDX-License-Identifier: BSD-3-Clause
// The project's RoadmapStore (search/roadmap_store.hpp): rest-pose roadmaps kept in memory and
// on disk, owned by whoever answers many plans (the server, the CLI process, a benchmark) and
// passed in with each request.
//
// Contents
//   RoadmapCacheOptions   how many to keep in memory, and a folder or a single file on disk.
//   RoadmapCache          get(): from memory, else from disk (if the file's fingerprint fits),
//                         else built -- once per key: a second request for a roadmap being built
//                         waits for that build (or stops when its own cancel says so).
//                         remember(): writes a roadmap's edge verdicts back to disk.
//   A folder may be shared by many servers (on NFS, say): a roadmap is built by one of them at a
//   time (a lock file per fingerprint), the others wait for it and load it; writes merge the
//   verdicts already on disk first, and a server takes up the verdicts others wrote when the
//   file changes.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "marionette/models/cancel.hpp"
#include "marionette/search/roadmap.hpp"
#include "marionette/search/roadmap_store.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct RoadmapCacheOptions {
  std::size_t capacity = 16;  // roadmaps kept in memory (the least recently used goes first)
  // A folder to save roadmaps in and load them from; file names are the fingerprint alone
  // ("<32 hex digits>.roadmap", and "<...>.roadmap.lock" beside it), never a name from a
  // request.  "" = none.
  std::string directory;
  // Or one file (the CLI's --roadmap): loaded if it exists -- and then it must fit, else an
  // error names it -- and written after every build and query.  "" = none.
  std::string file;
  // Told what went wrong with a folder's file, which the cache then works around: a file that
  // does not fit (corrupt, truncated, another model's, a directory in its place) is renamed
  // "<name>.bad-<time>" and the roadmap rebuilt; a roadmap that cannot be saved is kept in
  // memory.  Neither fails a request.  Default: nothing is told.
  std::function<void(const std::string& message)> on_file_problem;
};

class RoadmapCache final : public RoadmapStore {
 public:
  explicit RoadmapCache(RoadmapCacheOptions options = {});
  ~RoadmapCache();
  RoadmapCache(const RoadmapCache&) = delete;
  RoadmapCache& operator=(const RoadmapCache&) = delete;

  // The roadmap for (collision, options).  Throws PlanCancelled (cancelled while building or
  // waiting), RoadmapFileError (options.file does not fit), what build throws.  A file in the
  // folder that does not fit or cannot be read is set aside and rebuilt (on_file_problem).
  Lookup get(const CollisionModelPtr& collision, const RoadmapOptions& options,
             const BuildProgressFn& progress = {}, const CancelFn& cancelled = {}) override;
  // Saves the roadmap (with the edge verdicts its queries found) where it came from on disk;
  // nothing without a folder or file.  In a folder, first takes over (adoptVerdicts) the
  // verdicts other servers wrote to the file, under its lock.  A folder's file that cannot be
  // written is told to on_file_problem; options.file's throws FileError.
  void remember(RestPoseRoadmap& roadmap) override;

  // The file a roadmap of this fingerprint lives in ("" without a folder or file).
  std::string pathFor(const std::string& fingerprint) const;
  const RoadmapCacheOptions& options() const;
  std::size_t size() const;  // roadmaps in memory

 private:
  struct Impl;  // the roadmaps, their locks and files
  std::unique_ptr<Impl> impl_;
};

}  // namespace marionette

#pragma GCC visibility pop
