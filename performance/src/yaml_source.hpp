// SPDX-License-Identifier: BSD-3-Clause
// A performance source's YAML document, with errors as PerformanceFileError.
#pragma once

#include "marionette/common/yaml_document.hpp"
#include "marionette/common/yaml_reader.hpp"
#include "marionette/performance/performance_error.hpp"

namespace marionette::detail {

using PerformanceReader = YamlReader<PerformanceFileError>;

inline YAML::Node performanceYaml(const std::string& text, const std::string& source,
                                  std::size_t max_bytes) {
  try {
    return loadYamlDocument(text, max_bytes);
  } catch (const YamlDocumentError& e) {
    throw PerformanceFileError(source, e.line(), e.field(), e.what());
  }
}

}  // namespace marionette::detail
