// UTF-8 to code points and back, strictly: a bad lead or continuation byte, a truncated sequence, an
// overlong form, a surrogate or a value past U+10FFFF makes the text invalid (never silently changed).
// Used where text meets rules that need characters: StringNormalizer's case mapping, JSON strings.
#pragma once

#include <string>
#include <string_view>

namespace oneflow {

// The code points of `s` into `out` (cleared first); false when `s` is not UTF-8.
bool DecodeUtf8(std::string_view s, std::u32string& out);
// `cps` as UTF-8 into `out` (cleared first); every value must be a code point DecodeUtf8 accepts.
void EncodeUtf8(const std::u32string& cps, std::string& out);
bool IsUtf8(std::string_view s);

}  // namespace oneflow
