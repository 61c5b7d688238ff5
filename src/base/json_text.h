// A string as a JSON string literal (quotes, backslashes escaped; control characters as spaces),
// for the hand-written JSON of the explanations.
#pragma once

#include <string>

namespace oneflow {

// The inside of the literal, without the quotes.
inline std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch;
  }
  return o;
}

inline std::string JsonQuote(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }

}  // namespace oneflow
