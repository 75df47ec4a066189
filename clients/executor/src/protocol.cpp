// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/executor/protocol.hpp"
#include "marionette/executor/rig.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "marionette/common/files.hpp"
#include "marionette/common/yaml_document.hpp"
#include "marionette/models/input_limits.hpp"

#include "marionette/common/text.hpp"

namespace marionette::executor {

std::uint16_t crc16(const char* data, std::size_t n) {
  // CRC-16/CCITT-FALSE: polynomial 0x1021, initial value 0xFFFF, no reflection.
  std::uint16_t crc = 0xFFFF;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(data[i]) << 8);
    for (int b = 0; b < 8; ++b)
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
  }
  return crc;
}

std::string encodeFrame(const std::string& type, std::uint32_t seq,
                        const std::vector<std::string>& fields) {
  std::string body = type + "," + std::to_string(seq);
  for (const auto& f : fields) body += "," + f;
  char tail[8];
  std::snprintf(tail, sizeof tail, "*%04X\n", crc16(body.data(), body.size()));
  return "$" + body + tail;
}

DecodeResult decodeFrame(const std::string& line_in, WireFrame& out) {
  std::string line = line_in;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.size() > kMaxLineChars) return DecodeResult::Malformed;
  const auto star = line.rfind('*');
  if (line.size() < 8 || line[0] != '$' || star == std::string::npos || star + 5 != line.size())
    return DecodeResult::Malformed;
  char* end = nullptr;
  const std::string hex = line.substr(star + 1);
  const unsigned long sent = std::strtoul(hex.c_str(), &end, 16);
  if (*end != '\0') return DecodeResult::Malformed;
  if (sent != crc16(line.data() + 1, star - 1)) return DecodeResult::BadChecksum;
  std::vector<std::string> parts;
  std::stringstream ss(line.substr(1, star - 1));
  for (std::string p; std::getline(ss, p, ',');) parts.push_back(p);
  if (parts.size() < 2 || parts[0].empty()) return DecodeResult::Malformed;
  const unsigned long long seq = std::strtoull(parts[1].c_str(), &end, 10);
  if (parts[1].empty() || *end != '\0' || seq > 0xFFFFFFFFull) return DecodeResult::Malformed;
  out.type = parts[0];
  out.seq = static_cast<std::uint32_t>(seq);
  out.fields.assign(parts.begin() + 2, parts.end());
  return DecodeResult::Ok;
}

std::uint32_t readableSeq(const std::string& line) {
  std::size_t i = 1;
  if (line.empty() || line[0] != '$') return 0;
  while (i < line.size() && line[i] >= 'A' && line[i] <= 'Z') ++i;
  if (i == 1 || i >= line.size() || line[i] != ',') return 0;
  const std::size_t digits = ++i;
  unsigned long long seq = 0;
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9' && i - digits < 10; ++i)
    seq = 10 * seq + static_cast<unsigned>(line[i] - '0');
  if (i == digits || i >= line.size() || (line[i] != ',' && line[i] != '*') ||
      seq > 0xFFFFFFFFull)
    return 0;
  return static_cast<std::uint32_t>(seq);
}

RigConfig RigConfig::identity(const Model& model) {
  RigConfig rig;
  rig.name = model.name + " (model units)";
  for (int i = 0; i < model.nk(); ++i) {
    const auto& kv = model.kinematic[i];
    // A variable whose source is a rotation is in radians, else metres; the model says which
    // by its range only, so the unit on the wire is the generic "si".
    rig.channels.push_back({kv.name, i, 1.0, 0.0, "si", kv.lower, kv.upper});
  }
  return rig;
}

RigConfig RigConfig::load(const std::string& path, const Model& model) {
  return parse(readInputFile<std::invalid_argument>(path, kMaxDescriptionBytes, "rig file"), path,
               model);
}

namespace {

bool validUnit(const std::string& u) {
  if (u.empty() || u.size() > 16) return false;
  for (char c : u)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '/') return false;
  return true;
}

}  // namespace

namespace {
RigConfig parseRig(const YAML::Node& root, const std::string& source, const Model& model);
}  // namespace

RigConfig RigConfig::parse(const std::string& text, const std::string& source, const Model& model) {
  try {
    return parseRig(loadYamlDocument(text), source, model);
  } catch (const YamlDocumentError& e) {
    throw std::invalid_argument(source + ":" + std::to_string(e.line()) + ": " +
                                (e.field().empty() ? "" : e.field() + ": ") + e.what());
  } catch (const YAML::Exception& e) {
    // A key or value of the wrong kind (a list where a name belongs, ...), found by fuzzing.
    throw std::invalid_argument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

namespace {

RigConfig parseRig(const YAML::Node& root, const std::string& source, const Model& model) {
  auto where = [&](const YAML::Node& n, const std::string& what) {
    return source + ":" + std::to_string(n.Mark().line + 1) + ": " + what;
  };
  if (!root.IsMap()) throw std::invalid_argument(source + ": expected a map with 'channels'");
  RigConfig rig;
  rig.name = root["rig"] ? root["rig"].as<std::string>() : source;
  const YAML::Node channels = root["channels"];
  if (!channels || !channels.IsMap())
    throw std::invalid_argument(source + ": 'channels' must map each kinematic variable");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key == "sensing")
      rig.sensing = Sensing::parse(kv.second, source, model);
    else if (key != "rig" && key != "channels")
      throw std::invalid_argument(
          where(kv.first, "unknown key '" + key + "' (rig, channels, sensing)"));
  }
  std::set<int> used;
  for (const auto& kv : model.kinematic) {
    const YAML::Node c = channels[kv.name];
    if (!c)
      throw std::invalid_argument(source + ": channels: no entry for the kinematic variable '" +
                                  kv.name + "' (every one needs a channel)");
    if (!c.IsMap())
      throw std::invalid_argument(where(c, "channels." + kv.name + ": expected a map"));
    ChannelMap m;
    m.variable = kv.name;
    m.lower = kv.lower;
    m.upper = kv.upper;
    for (const auto& f : c) {
      const std::string key = f.first.as<std::string>();
      const std::string field = "channels." + kv.name + "." + key;
      try {
        if (key == "channel")
          m.channel = f.second.as<int>();
        else if (key == "scale")
          m.scale = f.second.as<double>();
        else if (key == "offset")
          m.offset = f.second.as<double>();
        else if (key == "unit")
          m.unit = f.second.as<std::string>();
        else
          throw std::invalid_argument(
              where(f.first, field + ": unknown field (channel, scale, offset, unit)"));
      } catch (const YAML::Exception&) {
        throw std::invalid_argument(where(f.second, field + ": not a valid value"));
      }
    }
    if (!c["channel"] || m.channel < 0)
      throw std::invalid_argument(
          where(c, "channels." + kv.name + ".channel: give an integer >= 0"));
    if (!used.insert(m.channel).second)
      throw std::invalid_argument(where(
          c, "channels." + kv.name + ".channel: " + std::to_string(m.channel) + " is used twice"));
    if (!std::isfinite(m.scale) || m.scale == 0.0 || !std::isfinite(m.offset))
      throw std::invalid_argument(where(c, "channels." + kv.name +
                                               ": scale must be finite and non-zero, offset "
                                               "finite"));
    if (!validUnit(m.unit))
      throw std::invalid_argument(where(c, "channels." + kv.name +
                                               ".unit: give the motor's unit (letters, digits, "
                                               "'_' or '/'), got '" +
                                               m.unit + "'"));
    rig.channels.push_back(m);
  }
  if (const std::size_t longest = rig.longestSetLine(); longest > kMaxLineChars)
    throw std::invalid_argument(source + ": channels: " + std::to_string(rig.channels.size()) +
                                " channels make SET lines of up to " + std::to_string(longest) +
                                " characters; the protocol allows " +
                                std::to_string(kMaxLineChars) + " (shorter units?)");
  for (const auto& kv : channels) {
    const std::string name = kv.first.as<std::string>();
    bool known = false;
    for (const auto& v : model.kinematic) known = known || v.name == name;
    if (!known)
      throw std::invalid_argument(where(kv.first, "channels." + name + ": '" + model.name +
                                                      "' has no kinematic variable of that name"));
  }
  return rig;
}

}  // namespace

std::size_t RigConfig::longestSetLine() const {
  // "$SET,4294967295" and "*XXXX"; each field ",CH:VALUE:UNIT" with VALUE as %.9g writes it at
  // its longest ("-1.23456789e-100").
  std::size_t n = 15 + 5;
  for (const ChannelMap& c : channels)
    n += 1 + std::to_string(c.channel).size() + 1 + 16 + 1 + c.unit.size();
  return n;
}

std::vector<std::string> encodeSetpoints(const RigConfig& rig, const Eigen::VectorXd& values) {
  std::vector<std::string> fields;
  fields.reserve(rig.channels.size());
  char buf[64];
  for (std::size_t i = 0; i < rig.channels.size(); ++i) {
    const ChannelMap& c = rig.channels[i];
    // 9 significant digits: well below any motor's resolution, and a line stays short.
    std::snprintf(buf, sizeof buf, "%d:%.9g:%s", c.channel, c.scale * values[i] + c.offset,
                  c.unit.c_str());
    fields.emplace_back(buf);
  }
  return fields;
}

bool decodeSetpoints(const RigConfig& rig, const std::vector<std::string>& fields,
                     Eigen::VectorXd& values, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  values.setConstant(static_cast<Eigen::Index>(rig.channels.size()),
                     std::numeric_limits<double>::quiet_NaN());
  for (const std::string& f : fields) {
    // The rig's bytes as they may be shown (a message, a log).
    auto bad = [&](const std::string& why) {
      return fail("field '" + printableBytes(f, 64) + "': " + why);
    };
    const auto a = f.find(':'), b = f.rfind(':');
    if (a == std::string::npos || a == b) return bad("expected CH:VALUE:UNIT");
    char* end = nullptr;
    const long ch = std::strtol(f.c_str(), &end, 10);
    if (end != f.c_str() + a) return bad("bad channel");
    const std::string num = f.substr(a + 1, b - a - 1);
    const double v = std::strtod(num.c_str(), &end);
    if (num.empty() || *end != '\0' || !std::isfinite(v)) return bad("bad value");
    const std::string unit = f.substr(b + 1);
    std::size_t i = 0;
    while (i < rig.channels.size() && rig.channels[i].channel != ch) ++i;
    if (i == rig.channels.size()) return bad("no such channel in the rig");
    const ChannelMap& c = rig.channels[i];
    if (!std::isnan(values[static_cast<Eigen::Index>(i)]))
      return bad("channel " + std::to_string(ch) + " is given twice");
    if (unit != c.unit)
      return bad("unit '" + printableBytes(unit, 16) + "', the rig file says '" + c.unit + "'");
    const double x = (v - c.offset) / c.scale;
    // The range as checkInputLimits takes it; beyond it, a position is not one the rig can be
    // at.
    const double tol = rangeTolerance(c.lower, c.upper);
    if (!(x >= c.lower - tol && x <= c.upper + tol)) {
      const double lo = c.scale * c.lower + c.offset, hi = c.scale * c.upper + c.offset;
      return bad("channel " + std::to_string(ch) + " (" + c.variable + ") is beyond its range [" +
                 formatNumber(std::min(lo, hi), 9) + ", " + formatNumber(std::max(lo, hi), 9) +
                 "] " + c.unit);
    }
    values[static_cast<Eigen::Index>(i)] = x;
  }
  for (std::size_t i = 0; i < rig.channels.size(); ++i)
    if (std::isnan(values[static_cast<Eigen::Index>(i)]))
      return fail("channel " + std::to_string(rig.channels[i].channel) + " (" +
                  rig.channels[i].variable + ") is missing");
  return true;
}

void readReply(const RigConfig& rig, const std::string& line, Clock::time_point received,
               std::vector<AckEvent>& acks, std::vector<MeasurementFrame>& measurements,
               long* corrupt_measurements) {
  WireFrame f;
  const DecodeResult r = decodeFrame(line, f);
  if (r != DecodeResult::Ok) {
    if (line.rfind("$MEA,", 0) == 0) {
      if (corrupt_measurements) ++*corrupt_measurements;  // unsolicited: it acknowledges nothing
    } else {
      acks.push_back({AckEvent::Kind::Corrupt, readableSeq(line), line, received});
    }
  } else if (f.type == "ACK") {
    acks.push_back({AckEvent::Kind::Ack, f.seq, "", received});
  } else if (f.type == "NAK") {
    std::string why;
    for (const auto& x : f.fields) why += (why.empty() ? "" : ",") + x;
    acks.push_back({AckEvent::Kind::Nak, f.seq, why, received});
  } else if (f.type == "MEA" && rig.sensing.declared()) {
    MeasurementFrame m;
    m.seq = f.seq;
    m.received = received;
    if (decodeMeasurement(rig.sensing, f.fields, m, nullptr))
      measurements.push_back(std::move(m));
    else if (corrupt_measurements)
      ++*corrupt_measurements;
  }  // POS answers to an earlier GET, anything else: ignored
}

}  // namespace marionette::executor
