#include "marionette/planner/roadmap_cache.hpp"

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "marionette/common/clock.hpp"
#include "marionette/common/file_lock.hpp"

namespace marionette {
namespace {

// Which file a path names now, 0 when none: its inode, size and modification time together (a
// rename puts another file there, whose inode may be one the file before last had).
std::uint64_t fileId(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  std::uint64_t id = 1469598103934665603ull;  // FNV-1a over the four numbers
  for (const std::uint64_t part :
       {static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
        static_cast<std::uint64_t>(st.st_mtim.tv_sec),
        static_cast<std::uint64_t>(st.st_mtim.tv_nsec)})
    id = (id ^ part) * 1099511628211ull;
  return id == 0 ? 1 : id;
}

// How long a write-back waits for another server's hold on the lock (a build can take minutes:
// the verdicts are then written without it, merged as far as the disk shows).
constexpr double kRememberLockWait_s = 5.0;

}  // namespace

RoadmapCache::RoadmapCache(RoadmapCacheOptions options) : options_(std::move(options)) {
  if (options_.capacity < 1) options_.capacity = 1;
}

std::string RoadmapCache::pathFor(const std::string& fingerprint) const {
  if (!options_.file.empty()) return options_.file;
  if (options_.directory.empty()) return "";
  return options_.directory + "/" + fingerprint + ".roadmap";
}

std::size_t RoadmapCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = 0;
  for (const auto& [key, e] : entries_) n += e.roadmap != nullptr;
  return n;
}

void RoadmapCache::evictLocked() {
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

std::uint64_t RoadmapCache::knownFileId(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.file_id;
}

void RoadmapCache::setFileId(const std::string& key, std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = entries_.find(key); it != entries_.end()) it->second.file_id = id;
}

RoadmapCache::Lookup RoadmapCache::get(const CollisionModelPtr& collision,
                                       const RoadmapOptions& options,
                                       const std::function<void(int, double)>& progress,
                                       const CancelFn& cancelled) {
  const std::string key = RestPoseRoadmap::fingerprint(*collision, options);
  const bool shared_folder = !options_.directory.empty();
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
          if (const std::uint64_t now = adoptFromDisk(*found, pathFor(key), known); now != known)
            setFileId(key, now);
        return {found, false};
      }
      // Being built by another call: wait for it, polling our own cancel (without the lock:
      // the caller's check may be slow).
      built_.wait_for(lock, std::chrono::milliseconds(10));
      lock.unlock();
      if (cancelled && cancelled()) throw PlanCancelled("waiting for a roadmap build");
      lock.lock();
    }
  }
  // Whatever happens below, the placeholder goes (or is filled) and waiters wake.
  std::shared_ptr<RestPoseRoadmap> roadmap;
  bool built = false;
  std::uint64_t file_id = 0;
  try {
    const std::string path = pathFor(key);
    // In a folder other servers may share, one builds at a time; the others wait here and then
    // load its file.  (Without a lock -- a read-only folder -- each works alone.)
    std::unique_ptr<FileLock> building;
    if (shared_folder) {
      building = FileLock::acquire(path + ".lock", [&] { return !(cancelled && cancelled()); });
      if (!building && cancelled && cancelled())
        throw PlanCancelled("waiting for another server's roadmap build");
    }
    std::error_code ec;
    if (!path.empty() && std::filesystem::exists(path, ec)) {
      try {
        roadmap = RestPoseRoadmap::load(path, collision, options);
        file_id = fileId(path);
      } catch (const RoadmapFileUnreadable& e) {
        if (!options_.file.empty()) throw;
        tell(std::string("roadmap file not read (") + e.what() + "): rebuilding");  // kept
      } catch (const RoadmapFileError& e) {
        if (!options_.file.empty()) throw;  // a file the caller named must fit
        setAside(path, e.what());           // rebuilt below, and saved in its place
      }
    }
    if (!roadmap) {
      roadmap = RestPoseRoadmap::build(collision, options, progress, cancelled);
      built = true;
      file_id = save(*roadmap, path);
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

void RoadmapCache::remember(RestPoseRoadmap& roadmap) {
  const std::string& key = roadmap.fingerprintId();
  const std::string path = pathFor(key);
  if (options_.directory.empty()) {
    save(roadmap, path);
    return;
  }
  // Read, merge and write under the lock, so that no server's verdicts are lost to another's
  // write.
  const auto t0 = SteadyClock::now();
  const auto held =
      FileLock::acquire(path + ".lock", [&] { return secondsSince(t0) < kRememberLockWait_s; });
  adoptFromDisk(roadmap, path, knownFileId(key));
  if (const std::uint64_t saved = save(roadmap, path)) setFileId(key, saved);
}

std::uint64_t RoadmapCache::adoptFromDisk(RestPoseRoadmap& roadmap, const std::string& path,
                                          std::uint64_t known_id) const {
  const std::uint64_t id = fileId(path);
  if (id == 0 || id == known_id) return id;
  try {
    const auto theirs = RestPoseRoadmap::load(path, roadmap.collisionModel(), roadmap.options());
    roadmap.adoptVerdicts(*theirs);
  } catch (const std::exception& e) {
    // A file that does not fit is replaced by the next save; nothing is taken from it.
    tell(std::string("roadmap file not merged (") + e.what() + ")");
  }
  return id;
}

std::uint64_t RoadmapCache::save(const RestPoseRoadmap& roadmap, const std::string& path) const {
  if (path.empty()) return 0;
  if (!options_.file.empty()) {
    roadmap.save(path);  // the caller's file: its errors too
    return fileId(path);
  }
  try {
    roadmap.save(path);
    return fileId(path);
  } catch (const std::exception& e) {
    tell(std::string("roadmap not saved (kept in memory): ") + e.what());
    return 0;
  }
}

void RoadmapCache::setAside(const std::string& path, const std::string& why) const {
  static std::atomic<unsigned> count{0};
  const std::string aside =
      path + ".bad-" + std::to_string(std::time(nullptr)) + "-" + std::to_string(++count);
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  tell("roadmap file does not fit (" + why +
       "): " + (ec ? "could not set it aside (" + ec.message() + ")" : "set aside as " + aside) +
       "; rebuilding");
}

void RoadmapCache::tell(const std::string& message) const {
  if (options_.on_file_problem) options_.on_file_problem(message);
}

}  // namespace marionette
