#include "marionette/common/text.hpp"

#include <algorithm>
#include <cstdio>

namespace marionette {

std::string joinNames(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? separator : "") + names[i];
  return out;
}

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::string formatNumber(double x, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

}  // namespace marionette
