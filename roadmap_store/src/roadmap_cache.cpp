// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/roadmap_store/roadmap_cache.hpp"

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "marionette/common/clock.hpp"
#include "marionette/common/file_lock.hpp"
#include "roadmap_folder.hpp"

namespace marionette {
namespace {

// Which file a path names now (RoadmapFolder::idOf), 0 when none.
std::uint64_t fileId(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return 0;
  return detail::RoadmapFolder::idOf(st);
}

// How long a write-back waits for another server's hold on the lock (a build can take minutes:
// the verdicts are then written without it, merged as far as the disk shows).
constexpr double kRememberLockWait_s = 5.0;

}  // namespace

struct RoadmapCache::Impl {
  explicit Impl(RoadmapCacheOptions options);
  Lookup get(const CollisionModelPtr& collision, const RoadmapOptions& options,
             const BuildProgressFn& progress, const CancelFn& cancelled);
  void remember(RestPoseRoadmap& roadmap);
  std::string pathFor(const std::string& fingerprint) const;
  std::size_t size() const;

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

RoadmapCache::Impl::Impl(RoadmapCacheOptions options) : options_(std::move(options)) {
  if (options_.capacity < 1) options_.capacity = 1;
  if (options_.file.empty() && !options_.directory.empty())
    folder_ = std::make_unique<detail::RoadmapFolder>(options_.directory);
}

std::string RoadmapCache::Impl::pathFor(const std::string& fingerprint) const {
  if (!options_.file.empty()) return options_.file;
  if (!folder_) return "";
  return folder_->pathOf(fileName(fingerprint));
}

std::string RoadmapCache::Impl::fileName(const std::string& fingerprint) {
  return fingerprint + ".roadmap";
}

std::uint64_t RoadmapCache::Impl::currentFileId(const std::string& key) const {
  return folder_ ? folder_->fileId(fileName(key)) : fileId(pathFor(key));
}

bool RoadmapCache::Impl::fileExists(const std::string& key) const {
  if (folder_) return folder_->exists(fileName(key));
  std::error_code ec;
  return !options_.file.empty() && std::filesystem::exists(options_.file, ec);
}

std::shared_ptr<RestPoseRoadmap> RoadmapCache::Impl::loadFile(const std::string& key,
                                                        const CollisionModelPtr& collision,
                                                        const RoadmapOptions& options) const {
  if (!folder_) return RestPoseRoadmap::load(options_.file, collision, options);
  std::istringstream text(folder_->read(
      fileName(key), RestPoseRoadmap::maxFileBytes(collision->model(), options)));
  return RestPoseRoadmap::read(text, pathFor(key), collision, options);
}

std::unique_ptr<FileLock> RoadmapCache::Impl::lockFile(const std::string& key,
                                                 const std::function<bool()>& keep_waiting) const {
  const std::string name = fileName(key) + ".lock";
  std::unique_ptr<FileLock> held = folder_->lock(name, keep_waiting);
  // Something other than a regular file in the lock's place (a symbolic link, a FIFO) is never
  // followed: it is set aside, and a lock file of the folder's own made once.
  if (!held && folder_->exists(name) && folder_->fileId(name) == 0) {
    setAside(name, "a lock that is not a regular file");
    held = folder_->lock(name, keep_waiting);
  }
  return held;
}

std::size_t RoadmapCache::Impl::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = 0;
  for (const auto& [key, e] : entries_) n += e.roadmap != nullptr;
  return n;
}

void RoadmapCache::Impl::evictLocked() {
  while (entries_.size() > options_.capacity) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second.roadmap &&
          (oldest == entries_.end() || it->second.last_use < oldest->second.last_use))
        oldest = it;
    if (oldest == entries_.end()) return;  // all being built
    entries_.erase(oldest);
  }
}

std::uint64_t RoadmapCache::Impl::knownFileId(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.file_id;
}

void RoadmapCache::Impl::setFileId(const std::string& key, std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = entries_.find(key); it != entries_.end()) it->second.file_id = id;
}

RoadmapStore::Lookup RoadmapCache::Impl::get(const CollisionModelPtr& collision,
                                       const RoadmapOptions& options,
                                       const BuildProgressFn& progress,
                                       const CancelFn& cancelled) {
  const CancelScope scope(cancelled);  // waits and builds below answer it
  const std::string key = RestPoseRoadmap::fingerprint(*collision, options);
  const bool shared_folder = folder_ != nullptr;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      const auto it = entries_.find(key);
      if (it == entries_.end()) {
        entries_[key];  // a placeholder: this call builds (or loads) it
        break;
      }
      if (it->second.roadmap) {
        it->second.last_use = ++uses_;
        std::shared_ptr<RestPoseRoadmap> found = it->second.roadmap;
        const std::uint64_t known = it->second.file_id;
        lock.unlock();
        // Another server wrote verdicts to the shared file since: take them up.
        if (shared_folder)
          if (const std::uint64_t now = adoptFromDisk(*found, known); now != known)
            setFileId(key, now);
        return {found, false};
      }
      // Being built by another call: wait for it, polling our own cancel (without the lock:
      // the caller's check may be slow).
      built_.wait_for(lock, std::chrono::milliseconds(10));
      lock.unlock();
      throwIfCancelled("waiting for a roadmap build");
      lock.lock();
    }
  }
  // Whatever happens below, the placeholder goes (or is filled) and waiters wake.
  std::shared_ptr<RestPoseRoadmap> roadmap;
  bool built = false;
  std::uint64_t file_id = 0;
  try {
    // In a folder other servers may share, one builds at a time; the others wait here and then
    // load its file.  (Without a lock -- a read-only folder -- each works alone.)
    std::unique_ptr<FileLock> building;
    if (shared_folder) {
      building = lockFile(key, [&] { return !cancelRequested(); });
      if (!building) throwIfCancelled("waiting for another server's roadmap build");
    }
    if (fileExists(key)) {
      try {
        roadmap = loadFile(key, collision, options);
        file_id = currentFileId(key);
      } catch (const RoadmapFileUnreadable& e) {
        if (!options_.file.empty()) throw;
        tell(std::string("roadmap file not read (") + e.what() + "): rebuilding");  // kept
      } catch (const RoadmapFileError& e) {
        if (!options_.file.empty()) throw;  // a file the caller named must fit
        setAside(fileName(key), e.what());  // rebuilt below, and saved in its place
      }
    }
    if (!roadmap) {
      roadmap = RestPoseRoadmap::build(collision, options, progress, cancelled);
      built = true;
      file_id = save(*roadmap);
    }
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      entries_.erase(key);
    }
    built_.notify_all();
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& e = entries_[key];
    e.roadmap = roadmap;
    e.last_use = ++uses_;
    e.file_id = file_id;
    evictLocked();
  }
  built_.notify_all();
  return {roadmap, built};
}

void RoadmapCache::Impl::remember(RestPoseRoadmap& roadmap) {
  const std::string& key = roadmap.fingerprintId();
  if (!folder_) {
    save(roadmap);
    return;
  }
  // Read, merge and write under the lock, so that no server's verdicts are lost to another's
  // write.
  const auto t0 = SteadyClock::now();
  const auto held = lockFile(
      key, [&] { return secondsSince(t0) < kRememberLockWait_s && !cancelRequested(); });
  throwIfCancelled("writing a roadmap's verdicts back");
  adoptFromDisk(roadmap, knownFileId(key));
  if (const std::uint64_t saved = save(roadmap)) setFileId(key, saved);
}

std::uint64_t RoadmapCache::Impl::adoptFromDisk(RestPoseRoadmap& roadmap,
                                          std::uint64_t known_id) const {
  const std::string& key = roadmap.fingerprintId();
  const std::uint64_t id = currentFileId(key);
  if (id == 0 || id == known_id) return id;
  try {
    const auto theirs = loadFile(key, roadmap.collisionModel(), roadmap.options());
    roadmap.adoptVerdicts(*theirs);
  } catch (const PlanCancelled&) {
    throw;
  } catch (const std::exception& e) {
    // A file that does not fit is replaced by the next save; nothing is taken from it.
    tell(std::string("roadmap file not merged (") + e.what() + ")");
  }
  return id;
}

std::uint64_t RoadmapCache::Impl::save(const RestPoseRoadmap& roadmap) const {
  const std::string& key = roadmap.fingerprintId();
  if (!options_.file.empty()) {
    roadmap.save(options_.file);  // the caller's file: its errors too
    return fileId(options_.file);
  }
  if (!folder_) return 0;
  try {
    folder_->write(fileName(key), roadmap.serialize());
    return currentFileId(key);
  } catch (const std::exception& e) {
    tell(std::string("roadmap not saved (kept in memory): ") + e.what());
    return 0;
  }
}

void RoadmapCache::Impl::setAside(const std::string& name, const std::string& why) const {
  static std::atomic<unsigned> count{0};
  const std::string aside =
      name + ".bad-" + std::to_string(std::time(nullptr)) + "-" + std::to_string(++count);
  const std::string failed = folder_->rename(name, aside);
  const bool lock = name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
  tell(std::string(lock ? "roadmap lock file" : "roadmap file") + " does not fit (" + why + "): " +
       (failed.empty() ? "set aside as " + folder_->pathOf(aside)
                       : "could not set it aside (" + failed + ")") +
       (lock ? "; a new lock file made" : "; rebuilding"));
}

void RoadmapCache::Impl::tell(const std::string& message) const {
  if (options_.on_file_problem) options_.on_file_problem(message);
}

RoadmapCache::RoadmapCache(RoadmapCacheOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

RoadmapCache::~RoadmapCache() = default;

RoadmapStore::Lookup RoadmapCache::get(const CollisionModelPtr& collision,
                                       const RoadmapOptions& options,
                                       const BuildProgressFn& progress,
                                       const CancelFn& cancelled) {
  return impl_->get(collision, options, progress, cancelled);
}

void RoadmapCache::remember(RestPoseRoadmap& roadmap) { impl_->remember(roadmap); }

std::string RoadmapCache::pathFor(const std::string& fingerprint) const {
  return impl_->pathFor(fingerprint);
}

const RoadmapCacheOptions& RoadmapCache::options() const { return impl_->options_; }

std::size_t RoadmapCache::size() const { return impl_->size(); }

}  // namespace marionette
