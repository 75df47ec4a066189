// SPDX-License-Identifier: BSD-3-Clause
// The streaming loop: absolute deadlines on the rig's clock (the monotonic clock, or a simulated
// rig's own), misses counted and never made up, acknowledgements tracked, safe stops.
#include "marionette/executor/executor.hpp"

#include "marionette/executor/closed_loop.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <sstream>

#include "marionette/common/files.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/input_limits.hpp"
#include "send_priority.hpp"

namespace marionette::executor {

const char* toString(StopReason r) {
  switch (r) {
    case StopReason::Completed: return "completed";
    case StopReason::Signal: return "stopped by a signal";
    case StopReason::LinkLost: return "link lost";
    case StopReason::RigRefused: return "the rig refused a command";
    case StopReason::DeadlineMisses: return "too many consecutive missed deadlines";
    case StopReason::Unsafe: return "safe stop";
  }
  return "?";
}

int exitStatus(StopReason r) {
  switch (r) {
    case StopReason::Completed: return 0;
    case StopReason::Signal: return 3;
    case StopReason::LinkLost:
    case StopReason::RigRefused: return 4;
    case StopReason::DeadlineMisses: return 5;
    case StopReason::Unsafe: return 7;
  }
  return 1;
}

// ---- The log -----------------------------------------------------------------------------------

CommandLog::CommandLog(const std::string& path, const Model& model) : f_(nullptr), nk_(model.nk()) {
  try {
    checkWritable(path);  // never a directory, a block device or a socket
  } catch (const FileError& e) {
    throw FieldError("log", e.what());
  }
  f_ = std::fopen(path.c_str(), "w");  // (a FIFO or a device written through)
  if (!f_) throw FieldError("log", path + ": cannot write");
  std::fprintf(f_, "event,seq,phase,sample,deadline_s,time_s,late_ms,rtt_ms");
  for (const auto& kv : model.kinematic) std::fprintf(f_, ",%s", kv.name.c_str());
  std::fprintf(f_, ",detail\n");
  std::fflush(f_);
}

CommandLog::~CommandLog() {
  if (f_) std::fclose(f_);
}

void CommandLog::sent(std::uint32_t seq, Phase phase, int sample, double deadline_s, double time_s,
                      const Eigen::VectorXd& values) {
  std::fprintf(f_, "sent,%u,%s,%d,%.6f,%.6f,%.3f,", seq, toString(phase), sample, deadline_s,
               time_s, 1e3 * (time_s - deadline_s));
  for (Eigen::Index j = 0; j < values.size(); ++j) std::fprintf(f_, ",%.9g", values[j]);
  std::fprintf(f_, ",\n");
  std::fflush(f_);  // what was sent is on record even if the process dies next
}

void CommandLog::event(const char* what, std::uint32_t seq, double time_s, double rtt_ms,
                       const std::string& detail) {
  // A detail may hold a rig's bytes: printable ASCII only, and no CSV separators or quotes.
  std::string clean = printableBytes(detail, 512);
  for (char& c : clean)
    if (c == ',' || c == '"') c = ' ';
  std::fprintf(f_, "%s,%u,,,,%.6f,,", what, seq, time_s);
  if (std::isfinite(rtt_ms)) std::fprintf(f_, "%.3f", rtt_ms);
  for (int j = 0; j < nk_; ++j) std::fputc(',', f_);
  std::fprintf(f_, ",%s\n", clean.c_str());
  std::fflush(f_);
}

// ---- The loop ----------------------------------------------------------------------------------

std::string frameProblem(const Model& model, double rate_hz, const Eigen::VectorXd& frame,
                         const Eigen::VectorXd& last, const Eigen::VectorXd& before_last) {
  const double h = 1.0 / rate_hz;
  for (int j = 0; j < model.nk(); ++j) {
    const KinematicVariable& kv = model.kinematic[j];
    const double x = frame[j];
    if (!std::isfinite(x)) return kv.name + ": " + formatNumber(x) + " is not a number";
    // checkInputLimits' tolerances: a relative 1e-6 of each limit, and rounding.
    const double eps = 1e-11 * std::max({1.0, std::abs(x), std::abs(last[j]),
                                         std::abs(before_last[j])});
    const double tol_r = rangeTolerance(kv);
    if (x < kv.lower - tol_r - eps || x > kv.upper + tol_r + eps)
      return formatted("%s: %.9g outside the range [%.9g, %.9g]", kv.name.c_str(), x, kv.lower,
                       kv.upper);
    const double speed = std::abs(x - last[j]) / h;
    if (speed > kv.max_speed * (1 + 1e-6) + 2 * eps / h)
      return formatted("%s: speed %.6g > max_speed %.6g", kv.name.c_str(), speed, kv.max_speed);
    const double accel = std::abs(x - 2 * last[j] + before_last[j]) / (h * h);
    if (accel > kv.max_accel * (1 + 1e-6) + 4 * eps / (h * h))
      return formatted("%s: acceleration %.6g > max_accel %.6g", kv.name.c_str(), accel,
                       kv.max_accel);
  }
  return "";
}

namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

ExecuteReport execute(RigDriver& rig, const Stream& stream, const ExecuteOptions& o) {
  ExecuteReport rep;
  const double period_s = 1.0 / stream.rate_hz;
  const auto period =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_s));
  const auto tolerance = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o.miss_tolerance_periods * period_s));
  const auto ack_timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
          o.ack_timeout_s > 0 ? o.ack_timeout_s : std::max(0.1, 3 * period_s)));
  if (o.keep_send_lateness) rep.late_ms.reserve(stream.rows.rows());
  const SendPriority priority;  // (until the loop's HOLD is out)
  rep.send_priority = priority.description();

  // The rows in order: the first pass, then for each further loop the way back and the play.
  struct Cursor {
    const Eigen::MatrixXd* rows;
    Phase phase;
    int sample;
  };
  const int play_end = stream.play_begin + stream.play_rows;
  int loop = 0, index = 0;
  bool returning = false;
  auto current = [&]() -> Cursor {
    if (returning) return {&stream.return_rows, stream.return_phase[index], index};
    return {&stream.rows, stream.phase[index], stream.sample[index]};
  };
  // Advances; false when the performance is over.
  auto advance = [&]() -> bool {
    ++index;
    if (returning && index >= stream.return_rows.rows()) {
      returning = false;
      index = stream.play_begin;
    }
    if (!returning && index >= play_end) {
      ++loop;
      rep.loops_done = loop;
      if (o.loops != 0 && loop >= o.loops) return false;
      if (stream.return_rows.rows() > 0) {
        returning = true;
        index = 0;
      } else {
        index = stream.play_begin;
      }
    }
    return true;
  };

  struct Pending {
    std::uint32_t seq;
    Clock::time_point sent;
  };
  std::deque<Pending> pending;
  std::vector<AckEvent> events;
  int consecutive_lost = 0, consecutive_misses = 0;
  std::uint32_t first_set_seq = 0;    // the first SET sent
  std::uint32_t last_set_seq = 0;     // the last SET sent
  std::uint32_t before_last_seq = 0;  // the one before it, and its values
  Eigen::VectorXd before_last_sent;
  // The frames the next one is checked against: before the first, the rig at rest where the
  // stream starts.
  Eigen::VectorXd guard_last, guard_before_last;
  if (stream.rows.rows() > 0) guard_last = guard_before_last = stream.rows.row(0).transpose();
  const Clock::time_point t0 = rig.now() + std::chrono::milliseconds(1);
  auto since = [&](Clock::time_point t) { return seconds(t - t0); };

  bool stopped = false;
  // refused: the SEQ of the SET the rig refused (0: none).
  auto stop = [&](StopReason reason, const std::string& why, std::uint32_t refused = 0) {
    stopped = true;
    rep.reason = reason;
    const std::uint32_t hold_seq = rig.takeSeq();
    rig.hold(hold_seq);
    std::ostringstream m;
    m << why << "; ";
    if (rep.stopped_sample < 0) {
      m << "nothing was sent";
    } else {
      m << "stopped after " << toString(rep.stopped_phase) << " sample " << rep.stopped_sample
        << " (loop " << loop + 1 << "); ";
      if (refused != 0 && refused == last_set_seq) {
        // The rig kept what it had before the refused frame.
        rep.last_sent = before_last_sent;
        if (before_last_seq == 0)
          m << "the rig holds the setpoints it had before the run";
        else
          m << "the rig holds the setpoints of the frame before it (seq " << before_last_seq
            << ")";
      } else {
        m << "the rig holds the last setpoints sent (seq " << last_set_seq << ")";
      }
    }
    rep.message = m.str();
    if (o.log) o.log->event("stop", hold_seq, since(rig.now()), NAN, rep.message);
  };
  // Acks and what is overdue; false when that stopped the run.
  auto collect = [&]() -> bool {
    events.clear();
    try {
      rig.poll(events);
    } catch (const LinkError& e) {
      stop(StopReason::LinkLost, e.what());
      return false;
    }
    for (const AckEvent& e : events) {
      if (e.kind == AckEvent::Kind::Corrupt) {
        ++rep.acks_corrupt;
        if (o.log) o.log->event("ack-corrupt", e.seq, since(e.received), NAN, e.detail);
        continue;
      }
      auto it = pending.begin();
      while (it != pending.end() && it->seq != e.seq) ++it;
      // A NAK of any SET of this run stops it, even one whose ACK was given up on; a late ACK,
      // or a reply to nothing of this run, is ignored.
      const bool refused_set = e.kind == AckEvent::Kind::Nak && first_set_seq != 0 &&
                               e.seq >= first_set_seq && e.seq <= last_set_seq;
      if (it == pending.end() && !refused_set) continue;
      double rtt_ms = NAN;
      if (it != pending.end()) {
        rtt_ms = 1e3 * seconds(e.received - it->sent);
        pending.erase(it);
      }
      if (e.kind == AckEvent::Kind::Nak) {
        ++rep.naks;
        if (o.log) o.log->event("nak", e.seq, since(e.received), rtt_ms, e.detail);
        stop(StopReason::RigRefused,
             rig.uri() + " refused frame " + std::to_string(e.seq) + " (" +
                 printableBytes(e.detail, 64) + ")",
             e.seq);
        return false;
      }
      ++rep.acks;
      consecutive_lost = 0;
      if (o.log) o.log->event("ack", e.seq, since(e.received), rtt_ms);
    }
    const auto now = rig.now();
    while (!pending.empty() && now - pending.front().sent > ack_timeout) {
      ++rep.acks_lost;
      ++consecutive_lost;
      if (o.log) o.log->event("ack-lost", pending.front().seq, since(now), NAN);
      pending.pop_front();
      if (consecutive_lost > o.max_consecutive_lost_acks) {
        stop(StopReason::LinkLost, rig.uri() + ": no acknowledgement for " +
                                       std::to_string(consecutive_lost) + " frames in a row");
        return false;
      }
    }
    return true;
  };

  const bool acks = rig.acknowledges();
  const auto requested = [&] { return o.stop_requested && o.stop_requested->load(); };
  // Replies read as they arrive, until `until` or until nothing is awaited: a NAK stops the run
  // before the next frame, and rtt_ms is the round trip.  False when that stopped the run.
  auto awaitReplies = [&](Clock::time_point until) -> bool {
    while (acks && !pending.empty() && !requested()) {
      const Clock::time_point now = rig.now();
      if (now >= until) break;
      // Woken by a reply, or when the oldest frame's acknowledgement is overdue.
      rig.awaitReply(std::min(until, pending.front().sent + ack_timeout +
                                         std::chrono::microseconds(100)));
      if (!collect()) return false;
    }
    return true;
  };
  long k = 0;  // the tick: deadline t0 + k * period
  bool more = stream.rows.rows() > 0;
  while (more) {
    if (o.stop_requested && o.stop_requested->load()) {
      stop(StopReason::Signal, "stopped on request (SIGINT / SIGTERM)");
      break;
    }
    const Clock::time_point deadline = t0 + k * period;
    if (!awaitReplies(deadline)) break;
    rig.sleepUntil(deadline, o.stop_requested);
    if (o.stop_requested && o.stop_requested->load()) {
      stop(StopReason::Signal, "stopped on request (SIGINT / SIGTERM)");
      break;
    }
    const Clock::time_point woke = rig.now();
    if (woke - deadline > tolerance) {
      // Missed: this tick and every later one whose time has also gone.  The performance waits
      // for the next tick; nothing is sent twice as fast to catch up.
      const long next =
          static_cast<long>(std::floor(seconds(woke - tolerance - t0) / period_s)) + 1;
      const long missed = std::max(1L, next - k);
      rep.missed_ticks += missed;
      consecutive_misses += static_cast<int>(missed);
      rep.longest_miss_run = std::max(rep.longest_miss_run, consecutive_misses);
      if (o.log)
        o.log->event(
            "miss", rig.nextSeq(), since(woke), NAN,
            std::to_string(missed) + " tick(s) from deadline " + std::to_string(since(deadline)));
      if (consecutive_misses > o.max_consecutive_misses) {
        stop(StopReason::DeadlineMisses,
             std::to_string(consecutive_misses) + " deadlines missed in a row (at most " +
                 std::to_string(o.max_consecutive_misses) + " allowed)");
        break;
      }
      k += missed;
      continue;
    }
    consecutive_misses = 0;
    const Cursor c = current();
    Eigen::VectorXd values = c.rows->row(index).transpose();
    if (o.closed_loop) {
      Eigen::VectorXd corrected;
      std::string why;
      bool go = false;
      try {  // it reads the rig's measurements
        go = o.closed_loop->beforeSend(rig, k, c.phase, c.sample, values, corrected, why);
      } catch (const LinkError& e) {
        stop(StopReason::LinkLost, e.what());
        break;
      }
      if (o.log)
        for (const std::string& clamp : o.closed_loop->frameClamps())
          o.log->event("clamp", rig.nextSeq(), since(rig.now()), NAN, clamp);
      if (!go) {
        stop(StopReason::Unsafe, why);
        break;
      }
      values = corrected;
    }
    // The last check before hardware: whatever made this frame, it keeps every limit.
    if (const std::string broken = frameProblem(*stream.model, stream.rate_hz, values,
                                                guard_last, guard_before_last);
        !broken.empty()) {
      stop(StopReason::Unsafe, "a frame that breaks a limit was not sent (" + broken + ")");
      break;
    }
    const std::uint32_t seq = rig.takeSeq();
    try {
      rig.send(seq, values);
    } catch (const LinkError& e) {
      stop(StopReason::LinkLost, e.what());
      break;
    }
    const Clock::time_point sent = rig.now();
    ++rep.frames_sent;
    before_last_seq = last_set_seq;
    before_last_sent.swap(rep.last_sent);
    if (first_set_seq == 0) first_set_seq = seq;
    last_set_seq = seq;
    rep.last_sent = values;
    guard_before_last.swap(guard_last);
    guard_last = values;
    rep.stopped_phase = c.phase;
    rep.stopped_sample = c.sample;
    if (o.keep_send_lateness) rep.late_ms.push_back(1e3 * seconds(sent - deadline));
    if (o.log) o.log->sent(seq, c.phase, c.sample, since(deadline), since(sent), values);
    if (acks) pending.push_back({seq, sent});
    if (o.closed_loop) o.closed_loop->afterSend(values);
    if (o.after_frame) {
      try {  // e.g. reading the rig's measurements
        o.after_frame(rig, c.phase, c.sample);
      } catch (const LinkError& e) {
        stop(StopReason::LinkLost, e.what());
        break;
      }
    }
    if (!collect()) break;
    more = advance();
    ++k;
  }
  // The last acknowledgements, each until it is overdue.
  while (!stopped && !pending.empty() && !requested())
    if (!awaitReplies(pending.back().sent + ack_timeout + std::chrono::milliseconds(1))) break;
  if (!stopped) {
    rep.reason = StopReason::Completed;
    std::ostringstream m;
    m << "completed " << rep.loops_done << " loop(s); the rig holds the last play sample";
    rep.message = m.str();
  }
  if (o.closed_loop) o.closed_loop->runEnded();
  rep.elapsed_s = since(rig.now());
  return rep;
}

}  // namespace marionette::executor
