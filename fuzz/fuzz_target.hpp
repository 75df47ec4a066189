// SPDX-License-Identifier: BSD-3-Clause
// What every fuzz target shares: its entry point over the input as text, and the one rule the
// targets check beyond "no crash, no leak, no hang" -- a bad input is refused with one of the
// errors the front ends turn into a message (a field error, a file/line error, a request error);
// any other exception escapes and libFuzzer reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "marionette/models/field_error.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/models/source_error.hpp"

// Defined by each target: runs one input.
void fuzzOne(const std::string& input);

// The errors a parser or a request check may refuse an input with.  std::invalid_argument covers
// FieldError, RequestError, PlanFileError and the CSV and rig-file errors.
#define MARIONETTE_FUZZ_ENTRY                                                          \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    try {                                                                              \
      fuzzOne(std::string(reinterpret_cast<const char*>(data), size));                 \
    } catch (const marionette::SourceError&) {                                         \
    } catch (const marionette::SimulationError&) {                                     \
    } catch (const std::invalid_argument&) {                                           \
    }                                                                                  \
    return 0;                                                                          \
  }
