// SPDX-License-Identifier: BSD-3-Clause
// The rig's protocol lines, as the executor reads the rig's replies: a frame decoded (a corrupt
// one's SEQ read for the log), and a POS frame's fields read back as setpoints.
#include "fuzz_target.hpp"
#include "marionette/executor/protocol.hpp"
#include "marionette/models/model_io.hpp"

void fuzzOne(const std::string& input) {
  static const marionette::ModelPtr model = marionette::loadModel("planar-arm");
  static const auto rig = marionette::executor::RigConfig::identity(*model);
  marionette::executor::WireFrame frame;
  if (marionette::executor::decodeFrame(input, frame) != marionette::executor::DecodeResult::Ok) {
    marionette::executor::readableSeq(input);
    return;
  }
  Eigen::VectorXd values;
  std::string error;
  marionette::executor::decodeSetpoints(rig, frame.fields, values, &error);
}

MARIONETTE_FUZZ_ENTRY
