#include "marionette/common/yaml_document.hpp"

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
void checkNode(const YAML::Node& node, const std::string& field, std::size_t& budget) {
  if (budget == 0)
    throw YamlDocumentError(lineOfMark(node.Mark()), field,
                            "the document expands to too many nodes (aliases?)");
  --budget;
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      checkNode(node[i], field + "[" + std::to_string(i) + "]", budget);
  } else if (node.IsMap()) {
    std::unordered_set<std::string> keys;
    for (const auto& kv : node) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      const std::string child = field.empty() ? key : field + "." + key;
      if (kv.first.IsScalar() && !keys.insert(key).second)
        throw YamlDocumentError(lineOfMark(kv.first.Mark()), child,
                                "duplicate key '" + key + "' (each key once per mapping)");
      checkNode(kv.second, child, budget);
    }
  }
}

}  // namespace

YAML::Node loadYamlDocument(const std::string& text, std::size_t max_bytes) {
  if (text.size() > max_bytes)
    throw YamlDocumentError(
        0, "",
        std::to_string(text.size()) + " bytes; at most " + std::to_string(max_bytes) + " are read");
  // A UTF-8 byte-order mark, as some editors write, is not part of the document.
  const bool bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(bom ? text.substr(3) : text);
  } catch (const YAML::Exception& e) {
    throw YamlDocumentError(lineOfMark(e.mark), "", "YAML syntax error: " + e.msg);
  }
  if (documents.size() > 1)
    throw YamlDocumentError(lineOfMark(documents[1].Mark()), "",
                            "a second YAML document (a file holds one; remove the '---')");
  if (documents.empty()) return YAML::Node();
  std::size_t budget = 4 * max_bytes;
  checkNode(documents[0], "", budget);
  return documents[0];
}

}  // namespace marionette
