// SPDX-License-Identifier: BSD-3-Clause
// The rig's line protocol (clients/executor/PROTOCOL.md): one ASCII line per frame,
//   $TYPE,SEQ[,FIELD...]*CRC\n
// with CRC the CRC-16/CCITT-FALSE of the characters between '$' and '*' as 4 upper-case hex
// digits.  The same frames go over a serial line and, one per datagram, over UDP.
//
// Contents
//   crc16              the checksum.
//   WireFrame          a decoded frame: type, sequence number, fields.
//   encodeFrame        builds a line (with its '\n').
//   decodeFrame        parses a line; says whether the checksum or the layout was bad.
//   readableSeq        the SEQ a corrupt line still shows, for the log.
//   ChannelMap         one kinematic variable on the wire: channel, scale, offset, unit, and
//                      the variable's range.
//   RigConfig          the per-rig YAML: a channel for every kinematic variable, and what the
//                      rig measures (sensing.hpp).
//   encodeSetpoints / decodeSetpoints   "CH:VALUE:UNIT" fields <-> values in model units.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "marionette/executor/sensing.hpp"
#include "marionette/models/model.hpp"

namespace marionette::executor {

std::uint16_t crc16(const char* data, std::size_t n);

// The longest line either side sends, without its line end; longer ones are malformed.
constexpr std::size_t kMaxLineChars = 1024;

struct WireFrame {
  std::string type;  // SET, GET, HOLD (host -> rig); ACK, NAK, POS (rig -> host)
  std::uint32_t seq = 0;
  std::vector<std::string> fields;
};

std::string encodeFrame(const std::string& type, std::uint32_t seq,
                        const std::vector<std::string>& fields = {});

enum class DecodeResult { Ok, BadChecksum, Malformed };
// `line` without or with its trailing '\n' (and '\r').
DecodeResult decodeFrame(const std::string& line, WireFrame& out);
// The SEQ of a line that failed its checksum, if its layout still shows one ("$TYPE,SEQ," or
// "$TYPE,SEQ*"), else 0: for the log only (a corrupt reply acknowledges nothing).
std::uint32_t readableSeq(const std::string& line);

// value_at_the_motor = scale * value_in_the_model + offset (e.g. a winch: metres of string ->
// spool radians, scale = 1 / spool radius).
struct ChannelMap {
  std::string variable;  // the model's kinematic variable
  int channel = 0;
  double scale = 1.0;
  double offset = 0.0;
  std::string unit;  // the motor's unit, sent with every value ("rad", "deg", "steps", ...)
  // The variable's range in the model's units (Model::kinematic): a position the rig reports
  // beyond it is refused (decodeSetpoints).
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
};

struct RigConfig {
  std::string name;
  std::vector<ChannelMap> channels;  // one per kinematic variable, in the model's order
  Sensing sensing;                   // what the rig measures (none: it runs open loop only)

  // Model units on the wire (m, rad), channel i = variable i.
  static RigConfig identity(const Model& model);
  // The YAML file: `rig: NAME`, `channels: {VARIABLE: {channel, scale, offset, unit}}` and,
  // optionally, `sensing:` (sensing.hpp).
  // Every kinematic variable must be mapped, to distinct channels; errors name the file, the
  // variable and the field.
  static RigConfig load(const std::string& path, const Model& model);
  static RigConfig parse(const std::string& yaml_text, const std::string& source,
                         const Model& model);
  // The longest SET line this map can make (any SEQ, any values), without its line end: at
  // most kMaxLineChars for a rig file to be accepted.
  std::size_t longestSetLine() const;
};

// values: n_k in model units -> one "CH:VALUE:UNIT" field per variable.
std::vector<std::string> encodeSetpoints(const RigConfig& rig, const Eigen::VectorXd& values);
// The reverse (fields in any order; every channel of the rig exactly once, each a finite number
// within its variable's range, up to checkInputLimits' tolerance).  On failure returns false
// and says why in *error.
bool decodeSetpoints(const RigConfig& rig, const std::vector<std::string>& fields,
                     Eigen::VectorXd& values, std::string* error);

}  // namespace marionette::executor
