// SPDX-License-Identifier: BSD-3-Clause
// Model files (YAML) and the built-in models.  The format is documented in docs/model-format.md.
//
// Every loader throws ModelError whose message names the file, the 1-based line and the field
// ("models/x.yaml:12: masses[2].mass: must be > 0 kg (got -0.1)").  Nothing is half-loaded.
#pragma once

#include <string>
#include <vector>

#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// Parses a model from YAML text; source_name is used in error messages.
ModelPtr loadModelString(const std::string& yaml_text, const std::string& source_name);

// Reads and parses a model file.
ModelPtr loadModelFile(const std::string& path);

// A built-in name ("planar-arm", ...) or a path to a YAML file.
ModelPtr loadModel(const std::string& name_or_path);

// Names of the built-in models (embedded in the library at build time from models/builtin/).
std::vector<std::string> builtinModelNames();

// The YAML text of a built-in model; empty if there is none with that name.
std::string builtinModelText(const std::string& name);

}  // namespace marionette

#pragma GCC visibility pop
