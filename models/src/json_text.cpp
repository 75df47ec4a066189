#include "marionette/models/json_text.hpp"

#include <cmath>
#include <iomanip>

namespace marionette {

void writeJsonString(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      os << '\\' << c;
    } else if (c == '\n') {
      os << "\\n";
    } else if (c == '\t') {
      os << "\\t";
    } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      os << "\\u" << std::hex << std::setw(4) << std::setfill('0') << int(c) << std::dec
         << std::setfill(' ');
    } else {
      os << c;
    }
  }
  os << '"';
}

void writeJsonNumber(std::ostream& os, double v) {
  if (std::isfinite(v))
    os << v;
  else
    os << "null";
}

}  // namespace marionette
