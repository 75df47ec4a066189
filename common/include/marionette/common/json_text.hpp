// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): JSON text for what the project writes (plan files, the viewer's
// documents, the CLI's --json output, the server's request log).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace marionette {

// A JSON string literal.  Besides quotes, backslashes and control characters, '<', '>' and '&'
// are escaped (\u003c ...), so that the text is also safe inside an HTML <script> element.
void writeJsonString(std::ostream& os, const std::string& s);
std::string jsonString(const std::string& s);  // the same, as a string

// A number as the stream formats it, or null when it is not finite (JSON has no inf or NaN).
void writeJsonNumber(std::ostream& os, double v);
// A number with 10 significant digits, or "null" when it is not finite.
std::string jsonNumber(double v);

// ["a", "b"]
std::string jsonArray(const std::vector<std::string>& items);

}  // namespace marionette
