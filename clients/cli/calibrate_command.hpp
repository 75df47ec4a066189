// SPDX-License-Identifier: BSD-3-Clause
// `marionette calibrate`: hold the rig at a few poses, measure the puppet at rest, fit its
// constant string lengths (and named masses), write the calibrated model; and the same before a
// run (`execute --calibrate`) through the pieces below.
//
// Contents
//   parseRigCalibration   the options from PREFIX{poses,masses,settle,measure,share}.
//   calibrationAcceptable a scene's veto of a pose that touches it (none without a scene).
//   parseLinkOptions      the link's flags, as execute's.
//   commitAfterMotion     an output written after the rig moved, never lost.
//   runRigCalibration     calibrateOnRig with its output and its stops worded for a command.
//   cmdCalibrate
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cli_util.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/executor/rig_calibration.hpp"

namespace marionette::cli {

// The flags, each PREFIX + name ("--" for calibrate, "--calibration-" for execute): poses,
// masses (NAME,...), settle (s), measure (s), share.  Throws std::invalid_argument naming the flag.
executor::RigCalibrationOptions parseRigCalibration(const Args& a, const std::string& prefix,
                                                    const ModelPtr& model, const ScenePtr& scene,
                                                    double send_rate_hz);
// The flag names parseRigCalibration reads, for parseArgs.
std::vector<std::string> rigCalibrationFlags(const std::string& prefix);

// The link's flags (execute's and calibrate's): --max-misses N, --ack-timeout S,
// --max-lost-acks N, as LinkOptions (without the stop request and the log).  Throws
// std::invalid_argument naming the flag.
executor::LinkOptions parseLinkOptions(const Args& a);
std::vector<std::string> linkFlags();

// The exit status of a command that moved the rig and then could not write an output: what it
// held is printed on stderr instead (docs/executor.md, exit codes).
constexpr int kOutputLostAfterMotion = 8;
// Commits `bytes` to `file`; when that fails after the rig moved, says so on stderr, prints the
// bytes there (nothing measured is lost) and returns false.  `flag` and `command`: for messages.
bool commitAfterMotion(OutputFile& file, const std::string& bytes, const std::string& flag,
                       const std::string& command);

// Calibrates on `rig` (every move sent under `link`, the operator's), printing the fitted values;
// nullopt (and the exit status in *status, the reason on stderr) when it stopped or failed.
// `command`: for messages.
std::optional<executor::RigCalibration> runRigCalibration(
    executor::RigDriver& rig, const ModelPtr& model, const executor::RigCalibrationOptions& options,
    const executor::LinkOptions& link, const std::string& command, int* status);

int cmdCalibrate(int argc, char** argv);

}  // namespace marionette::cli
