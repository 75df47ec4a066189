#include "marionette/planner/roadmap_cache.hpp"

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>

namespace marionette {

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

RoadmapCache::Lookup RoadmapCache::get(const CollisionModelPtr& collision,
                                       const RoadmapOptions& options,
                                       const std::function<void(int, double)>& progress,
                                       const CancelFn& cancelled) {
  const std::string key = RestPoseRoadmap::fingerprint(*collision, options);
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
        return {it->second.roadmap, false};
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
  try {
    const std::string path = pathFor(key);
    std::error_code ec;
    if (!path.empty() && std::filesystem::exists(path, ec)) {
      try {
        roadmap = RestPoseRoadmap::load(path, collision, options);
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
      save(*roadmap, path);
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
    evictLocked();
  }
  built_.notify_all();
  return {roadmap, built};
}

void RoadmapCache::remember(const RestPoseRoadmap& roadmap) {
  save(roadmap, pathFor(roadmap.fingerprintId()));
}

void RoadmapCache::save(const RestPoseRoadmap& roadmap, const std::string& path) const {
  if (path.empty()) return;
  if (!options_.file.empty()) return roadmap.save(path);  // the caller's file: its errors too
  try {
    roadmap.save(path);
  } catch (const std::exception& e) {
    tell(std::string("roadmap not saved (kept in memory): ") + e.what());
  }
}

void RoadmapCache::setAside(const std::string& path, const std::string& why) const {
  static std::atomic<unsigned> count{0};
  const std::string aside =
      path + ".bad-" + std::to_string(std::time(nullptr)) + "-" + std::to_string(++count);
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  tell("roadmap file does not fit (" + why + "): " +
       (ec ? "could not set it aside (" + ec.message() + ")" : "set aside as " + aside) +
       "; rebuilding");
}

void RoadmapCache::tell(const std::string& message) const {
  if (options_.on_file_problem) options_.on_file_problem(message);
}

}  // namespace marionette
