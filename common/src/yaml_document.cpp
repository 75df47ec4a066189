// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/common/yaml_document.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>
#include <unordered_set>
#include <vector>

namespace marionette {

namespace {

int lineOfMark(const YAML::Mark& m) {
  return m.line >= 0 ? m.line + 1 : 0;
}

// Walks the document once (an alias is walked where it is used, so a document whose aliases
// expand beyond `budget` nodes is refused rather than walked for ever), refusing a key repeated
// within one mapping.
void checkNode(const YAML::Node& node, const std::string& field, std::size_t& budget,
               int depth = 0) {
  // yaml-cpp records an anchor before its children, so `&a [*a]` is a node inside itself: the
  // depth bound stops that walk (it overflowed the stack) as it does absurd nesting.
  constexpr int kMaxDepth = 64;
  if (depth > kMaxDepth)
    throw YamlDocumentError(lineOfMark(node.Mark()), field.substr(0, 80),
                            "nested deeper than " + std::to_string(kMaxDepth) +
                                " levels (or an alias that refers to itself)");
  if (budget == 0)
    throw YamlDocumentError(lineOfMark(node.Mark()), field,
                            "the document expands to too many nodes (aliases?)");
  --budget;
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      checkNode(node[i], field + "[" + std::to_string(i) + "]", budget, depth + 1);
  } else if (node.IsMap()) {
    std::unordered_set<std::string> keys;
    for (const auto& kv : node) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      const std::string child = field.empty() ? key : field + "." + key;
      if (kv.first.IsScalar() && !keys.insert(key).second)
        throw YamlDocumentError(lineOfMark(kv.first.Mark()), child,
                                "duplicate key '" + key + "' (each key once per mapping)");
      checkNode(kv.second, child, budget, depth + 1);
    }
  }
}

// Notes where documents start, and nothing else.
struct DocumentStarts : YAML::EventHandler {
  int documents = 0, second_line = 0;
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents == 2) second_line = lineOfMark(mark);
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

YAML::Node loadYamlDocument(const std::string& text, std::size_t max_bytes) {
  if (text.size() > max_bytes)
    throw YamlDocumentError(
        0, "",
        std::to_string(text.size()) + " bytes; at most " + std::to_string(max_bytes) + " are read");
  // A UTF-8 byte-order mark, as some editors write, is not part of the document.
  const bool bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0;
  const std::string body = bom ? text.substr(3) : text;
  YAML::Node root;
  try {
    root = YAML::Load(body);
    // Whether a second document follows, from the parser's events alone.  (YAML::LoadAll never
    // returns for a stray ',' where a document starts: yaml-cpp 0.7 hands out empty documents
    // without consuming it.  Two documents are all this needs to see.)
    std::istringstream in(body);
    YAML::Parser parser(in);
    DocumentStarts starts;
    if (parser.HandleNextDocument(starts) && parser.HandleNextDocument(starts))
      throw YamlDocumentError(starts.second_line, "",
                              "a second YAML document, or text after the first that is not "
                              "YAML (a file holds one document)");
  } catch (const YAML::Exception& e) {
    throw YamlDocumentError(lineOfMark(e.mark), "", "YAML syntax error: " + e.msg);
  }
  std::size_t budget = 4 * max_bytes;
  checkNode(root, "", budget);
  return root;
}

}  // namespace marionette
