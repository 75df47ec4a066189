// JSON text for the files the project writes (plan files, the viewer's documents).
#pragma once

#include <ostream>
#include <string>

namespace marionette {

// A JSON string literal.  Besides quotes, backslashes and control characters, '<', '>' and '&'
// are escaped (\u003c ...), so that the text is also safe inside an HTML <script> element.
void writeJsonString(std::ostream& os, const std::string& s);

// A number as the stream formats it, or null when it is not finite (JSON has no inf or NaN).
void writeJsonNumber(std::ostream& os, double v);

}  // namespace marionette
