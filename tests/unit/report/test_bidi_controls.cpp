// The bidirectional controls are shown as one marker in every format (bidi_controls.hpp).
#include <doctest/doctest.h>

#include <string>

#include "report/detail/bidi_controls.hpp"
#include "report/detail/html_style.hpp"
#include "report/junit_report.hpp"
#include "report/markdown_report.hpp"
#include "report/terminal_summary.hpp"

using namespace llmrepro;

namespace {

// Every bidirectional control, each between two letters.
const std::string k_all_controls =
    "a\u202Ab\u202Bc\u202Cd\u202De\u202Ef\u2066g\u2067h\u2068i\u2069j";
const std::string k_all_marked = "a\\u{202a}b\\u{202b}c\\u{202c}d\\u{202d}e\\u{202e}f\\u{2066}g"
                                 "\\u{2067}h\\u{2068}i\\u{2069}j";

} // namespace

TEST_CASE("mark_bidi_controls") {
  CHECK(report::detail::mark_bidi_controls(k_all_controls) == k_all_marked);
  SUBCASE("their neighbours are left alone") {
    // U+2029 (paragraph separator), U+202F (narrow no-break space), U+2065, U+206A, U+2060.
    const std::string near = "\u2029\u202F\u2065\u206A\u2060 \u20AC";
    CHECK(report::detail::mark_bidi_controls(near) == near);
    CHECK(report::detail::mark_bidi_controls("") == "");
    CHECK(report::detail::mark_bidi_controls("\xE2\x80") == "\xE2\x80"); // a fragment
  }
}

TEST_CASE("bidirectional controls in every format") {
  const std::string id = "invoice\u202Efdp.exe";
  CHECK(report::html_escape(id) == "invoice\\u{202e}fdp.exe");
  CHECK(report::html_escape(k_all_controls) == k_all_marked);
  CHECK(report::xml_escape(id, true) == "invoice\\u{202e}fdp.exe");
  CHECK(report::xml_escape(k_all_controls, false) == k_all_marked);
  // Markdown writes the marker's backslash as a character reference, which shows as "\".
  CHECK(report::markdown_escape(id, 80) == "invoice&#92;u{202e}fdp.exe");
  CHECK(report::escape_terminal_text(id, 0) == "invoice\\u{202e}fdp.exe");
  CHECK(report::escape_terminal_text(k_all_controls, 0) == k_all_marked);
}
