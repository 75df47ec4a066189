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

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "marionette/models/cancel.hpp"
#include "marionette/search/roadmap.hpp"
#include "marionette/search/roadmap_store.hpp"

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

class FileLock;
namespace detail {
class RoadmapFolder;
}

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
  const RoadmapCacheOptions& options() const { return options_; }
  std::size_t size() const;  // roadmaps in memory

 private:
  struct Entry {
    std::shared_ptr<RestPoseRoadmap> roadmap;  // null while being built
    unsigned long last_use = 0;
    std::uint64_t file_id = 0;  // the folder's file as last read or written here
  };
  void evictLocked();
  // The file of the roadmap with fingerprint `key` (the folder's "<key>.roadmap", or
  // options.file): whether anything is there, which file it is now (0: none), its roadmap
  // (bounded by RestPoseRoadmap::maxFileBytes; what load throws), its lock (a folder's).
  static std::string fileName(const std::string& key);
  bool fileExists(const std::string& key) const;
  std::uint64_t currentFileId(const std::string& key) const;
  std::shared_ptr<RestPoseRoadmap> loadFile(const std::string& key,
                                            const CollisionModelPtr& collision,
                                            const RoadmapOptions& options) const;
  std::unique_ptr<FileLock> lockFile(const std::string& key,
                                     const std::function<bool()>& keep_waiting) const;
  // Saved, or in a folder the failure told.  Returns the saved file's id (0 when not saved).
  std::uint64_t save(const RestPoseRoadmap& roadmap) const;
  // The verdicts of a folder's file that changed since `known_id` taken over by `roadmap`;
  // returns the file's id now.
  std::uint64_t adoptFromDisk(RestPoseRoadmap& roadmap, std::uint64_t known_id) const;
  std::uint64_t knownFileId(const std::string& key) const;
  void setFileId(const std::string& key, std::uint64_t id);
  // A folder's file renamed out of the way ("<name>.bad-<time>-<n>"), and told.
  void setAside(const std::string& name, const std::string& why) const;
  void tell(const std::string& message) const;

  RoadmapCacheOptions options_;
  std::unique_ptr<detail::RoadmapFolder> folder_;  // with options.directory
  mutable std::mutex mutex_;
  std::condition_variable built_;
  std::map<std::string, Entry> entries_;
  unsigned long uses_ = 0;
};

}  // namespace marionette
