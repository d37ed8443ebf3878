// The one rule every report format applies to the bidirectional-override characters in text it
// did not write (model text, tokens, prompt ids, URLs, error bodies): U+202A..U+202E (LRE, RLE,
// PDF, LRO, RLO) and U+2066..U+2069 (LRI, RLI, FSI, PDI) reorder the text around them when
// displayed, so a prompt id or a completion could show something else than what it holds
// ("Trojan Source"). Each is shown as the visible marker "\u{202e}" instead, in HTML, JUnit,
// Markdown, the terminal and the notes on stderr alike.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <cstdio>

namespace llmrepro::core {

inline bool is_bidi_control(char32_t code_point) {
  return (code_point >= 0x202A && code_point <= 0x202E) ||
         (code_point >= 0x2066 && code_point <= 0x2069);
}

// "\u{202e}": the marker shown in place of a bidirectional control.
inline std::string bidi_marker(char32_t code_point) {
  char marker[16];
  std::snprintf(marker, sizeof marker, "\\u{%04x}", static_cast<unsigned>(code_point));
  return marker;
}

// `text` (UTF-8) with every bidirectional control replaced by its marker; anything else, valid
// or not, is left as it is for the format's own escaping.
inline std::string mark_bidi_controls(std::string_view text) {
  std::string out;
  std::size_t copied = 0;
  for (std::size_t at = text.find('\xE2'); at != std::string_view::npos && at + 2 < text.size();
       at = text.find('\xE2', at + 1)) {
    const auto second = static_cast<unsigned char>(text[at + 1]);
    const auto third = static_cast<unsigned char>(text[at + 2]);
    if (second != 0x80 && second != 0x81) continue;
    if (third < 0x80 || third > 0xBF) continue;
    const char32_t code_point =
        0x2000 + (static_cast<char32_t>(second & 0x3F) << 6) + static_cast<char32_t>(third & 0x3F);
    if (!is_bidi_control(code_point)) continue;
    out.append(text.substr(copied, at - copied));
    out += bidi_marker(code_point);
    copied = at + 3;
    at += 2;
  }
  if (copied == 0) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

} // namespace llmrepro::core
