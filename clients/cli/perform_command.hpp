// SPDX-License-Identifier: BSD-3-Clause
// marionette perform: a recorded or authored motion played by a puppet (docs/performance.md).
//   marionette perform --model M [--scene S]
//       (--markers F.csv | --pcr F.pcr | --bvh F.bvh [--map MAP.yaml] | --keyframes F.yaml)...
//       [--blend S] [--from S] [--to S] [--speed X] [--loop N] [--disable LIMB,...]
//       [--margin M] [--tolerance M] [--reach-tolerance M] [--no-retarget]
//       [--rate HZ] [--key-rate HZ] [--knots N] [--settle S]
//       [--time-limit S] [--kinematic-only] [--weight NAME=V]... --out perf.json
//       [--inputs-csv FILE] [--quiet]
// Several sources play one after another (in the order given), blended over --blend seconds.
#pragma once

namespace marionette::cli {

// Exit status: 0 exact (collision-free with the margin, within every limit; the tracking is
// reported either way), 4 approximate, 2 bad arguments or files.
int cmdPerform(int argc, char** argv);

}  // namespace marionette::cli
