// SPDX-License-Identifier: BSD-3-Clause
// openRig: a rig URI (sim:, serial:, udp:) and its options, checked, to its driver.
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "framed_rig.hpp"
#include "marionette/common/text.hpp"
#include "marionette/executor/rig.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"

namespace marionette::executor {
namespace {

// "a=1&b=2" after '?'; only the keys in `repeatable` may come more than once.
std::multimap<std::string, std::string> query(const std::string& uri, std::string& head,
                                              const std::set<std::string>& repeatable) {
  std::multimap<std::string, std::string> q;
  const auto mark = uri.find('?');
  head = uri.substr(0, mark);
  if (mark == std::string::npos) return q;
  std::stringstream ss(uri.substr(mark + 1));
  for (std::string kv; std::getline(ss, kv, '&');) {
    std::string key, value;
    if (!splitNameValue(kv, key, value))
      throw std::invalid_argument(uri + ": '" + kv + "' is not KEY=VALUE");
    if (q.count(key) && !repeatable.count(key))
      throw std::invalid_argument(uri + ": " + key + " is given twice");
    q.emplace(key, value);
  }
  return q;
}

double number(const std::string& uri, const std::string& key, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    throw std::invalid_argument(uri + ": " + key + "=" + text + " is not a number");
  return v;
}

// push=POINT:T:VX,VY,VZ (a point of the model, the rig's time in s, m/s).
SimTruth::Push parsePush(const std::string& uri, const std::string& text) {
  const std::string key = "push=" + text;
  const auto a = text.find(':'), b = text.find(':', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos)
    throw std::invalid_argument(uri + ": " + key + " is not POINT:T:VX,VY,VZ");
  SimTruth::Push push;
  push.point = text.substr(0, a);  // (the truth's point: checked by SimRig)
  if (push.point.empty()) throw std::invalid_argument(uri + ": push: give the point's name");
  push.at_s = number(uri, "push", text.substr(a + 1, b - a - 1));
  if (push.at_s < 0) throw std::invalid_argument(uri + ": push: the time must be >= 0 s");
  const std::string components = text.substr(b + 1);
  if (components.empty() || components.back() == ',')
    throw std::invalid_argument(uri + ": push: give three velocity components");
  std::stringstream ss(components);
  int i = 0;
  for (std::string c; std::getline(ss, c, ',');) {
    if (i == 3) throw std::invalid_argument(uri + ": push: give three velocity components");
    push.point_delta_mps[i++] = number(uri, "push", c);
  }
  if (i != 3) throw std::invalid_argument(uri + ": push: give three velocity components");
  if (push.point_delta_mps.cwiseAbs().maxCoeff() > 100.0)
    throw std::invalid_argument(uri + ": push: each velocity component must be within 100 m/s");
  return push;
}

}  // namespace

std::unique_ptr<RigDriver> openRig(const std::string& uri, const ModelPtr& model,
                                   const RigConfig& rig, double rate_hz) {
  std::string head;
  auto q = query(uri, head, {"push"});
  auto take = [&](const std::string& key) {
    const auto it = q.find(key);
    if (it == q.end()) return std::string();
    const std::string v = it->second;
    q.erase(it);
    return v;
  };
  auto noMore = [&] {
    if (!q.empty())
      throw std::invalid_argument(uri + ": unknown option '" + q.begin()->first + "'");
  };
  if (head == "sim:" || head == "sim") {
    SimTruth t;
    const std::string d = take("damping"), truth = take("truth"), noise = take("noise"),
                      rate = take("rate"), latency = take("latency"), seed = take("seed"),
                      clock = take("clock");
    for (auto it = q.lower_bound("push"); it != q.end() && it->first == "push"; it = q.erase(it))
      t.pushes.push_back(parsePush(uri, it->second));
    noMore();
    if (!clock.empty() && clock != "simulated" && clock != "wall")
      throw std::invalid_argument(uri + ": clock=" + clock +
                                  " is not 'wall' (real time, the default) or 'simulated'");
    t.simulated_clock = clock == "simulated";
    t.damping_scale = d.empty() ? 1.0 : number(uri, "damping", d);
    if (!(t.damping_scale >= 0)) throw std::invalid_argument(uri + ": damping must be >= 0");
    // Sensing: the rig file's, or every named point when the URI asks for measurements.
    t.sensing = rig.sensing;
    const bool measuring = !(truth + noise + rate + latency + seed).empty();
    if (!t.sensing.declared() && measuring) {
      for (const Point& p : model->points) t.sensing.markers.push_back(p.name);
      t.sensing.rate_hz = 30.0;
    }
    if (!rate.empty()) t.sensing.rate_hz = number(uri, "rate", rate);
    if (!latency.empty()) t.sensing.latency_s = number(uri, "latency", latency);
    t.noise = noise.empty() ? t.sensing.marker_noise_m : number(uri, "noise", noise);
    if (!noise.empty()) t.sensing.marker_noise_m = t.sensing.encoder_noise = t.noise;
    if (!(t.sensing.rate_hz >= Sensing::kMinRate_hz && t.sensing.rate_hz <= Sensing::kMaxRate_hz) &&
        t.sensing.declared())
      throw std::invalid_argument(uri + ": rate must be in [1, 1000] Hz");
    if (!(t.sensing.latency_s >= 0 && t.sensing.latency_s <= 1))
      throw std::invalid_argument(uri + ": latency must be in [0, 1] s");
    if (!(t.noise >= 0 && t.noise <= 1)) throw std::invalid_argument(uri + ": noise must be in [0, 1]");
    if (!seed.empty()) {
      const double n = number(uri, "seed", seed);
      if (!(n >= 0 && n == std::floor(n) && n < 4294967296.0))
        throw std::invalid_argument(uri + ": seed must be an integer >= 0");
      t.seed = static_cast<unsigned>(n);
    }
    if (!truth.empty()) {
      try {
        t.truth = loadModel(truth);
      } catch (const std::exception& e) {
        throw std::invalid_argument(uri + ": truth: " + e.what());
      }
    }
    return std::make_unique<SimRig>(model, rate_hz, std::move(t));
  }
  if (head.rfind("serial:", 0) == 0) {
    const std::string path = head.substr(7);
    const std::string b = take("baud");
    noMore();
    if (path.empty()) throw std::invalid_argument(uri + ": give the device, serial:/dev/ttyX");
    return detail::openSerialRig(uri, path,
                                 b.empty() ? 115200 : std::lround(number(uri, "baud", b)), rig);
  }
  if (head.rfind("udp:", 0) == 0) {
    noMore();
    const std::string addr = head.substr(4);
    const auto colon = addr.rfind(':');
    if (colon == std::string::npos || colon + 1 == addr.size())
      throw std::invalid_argument(uri + ": give HOST:PORT, udp:127.0.0.1:9000");
    std::string host = addr.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    return detail::openUdpRig(uri, host, addr.substr(colon + 1), rig);
  }
  throw FieldError("rig", uri + ": unknown rig (sim:, serial:/dev/ttyX?baud=N, udp:HOST:PORT)");
}

}  // namespace marionette::executor
