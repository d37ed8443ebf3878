// The look shared by every HTML page llmrepro writes (the audit report, the diff, the
// gpu-probe page) and the escaping every one of them applies to text it did not write.
#pragma once

#include <string>
#include <string_view>

#include "core/text_utf8.hpp"
#include "report/detail/bidi_controls.hpp"

namespace llmrepro::report {

// Text made safe for HTML element content and quoted attribute values: & < > " ' become
// entities, invalid UTF-8 becomes U+FFFD, and control characters other than tab, newline and
// carriage return become their visible Unicode control pictures (U+2400 block), and the
// bidirectional overrides their "\u{202e}" markers (bidi_controls.hpp), so model output can
// neither open markup, nor vanish, nor reorder what is around it.
inline std::string html_escape(std::string_view text) {
  const std::string clean = detail::mark_bidi_controls(core::sanitize_utf8(text));
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  for (char c : clean) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default:
      if ((byte < 0x20 && c != '\t' && c != '\n' && c != '\r') || byte == 0x7F) {
        // U+2400 + byte (U+2421 for DEL): three bytes E2 90 xx.
        const unsigned picture = byte == 0x7F ? 0x21u : byte;
        out += '\xE2';
        out += '\x90';
        out += static_cast<char>(0x80u | picture);
      } else {
        out += c;
      }
    }
  }
  return out;
}

// The stylesheet (no @import, no url(): nothing is fetched when the page opens). Colours say
// pass (green), fail (red) and warn (amber); charts use the chart-* classes of svg_chart.hpp.
inline std::string_view html_page_style() {
  return R"css(
:root{--fg:#1f2328;--muted:#656d76;--faint:#8c959f;--line:#d0d7de;--bg:#f6f8fa;--card:#fff;
--pass:#1a7f37;--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--warn:#9a6700;--warn-bg:#fff8c5;
--accent:#0969da;--accent-bg:#ddf4ff;--s1:#0969da;--s2:#bf8700;--s3:#8250df;
--mono:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono",monospace}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.5 system-ui,-apple-system,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:16px 20px 48px}
header.page{display:flex;align-items:baseline;gap:16px;flex-wrap:wrap;margin-bottom:12px}
header.page h1{font-size:20px;margin:0;font-weight:600}
header.page .meta{color:var(--muted);font-size:13px}
h2{font-size:16px;margin:24px 0 8px;font-weight:600}
h3{font-size:14px;margin:14px 0 6px;font-weight:600}
code,.mono{font-family:var(--mono);font-size:12.5px}
.muted{color:var(--muted)}
.verdict{display:flex;align-items:center;gap:18px;padding:12px 18px;border-radius:10px;
border:1px solid var(--line);background:var(--card);margin-bottom:12px}
.verdict .badge{font-size:22px;font-weight:700;letter-spacing:.04em;padding:4px 16px;border-radius:8px}
.verdict.pass{border-color:#4ac26b}.verdict.pass .badge{background:var(--pass-bg);color:var(--pass)}
.verdict.fail{border-color:#ff8182}.verdict.fail .badge{background:var(--fail-bg);color:var(--fail)}
.verdict.error{border-color:#ff8182}.verdict.error .badge{background:var(--fail-bg);color:var(--fail)}
.verdict.nogate{border-color:#d4a72c}.verdict.nogate .badge{background:var(--warn-bg);color:var(--warn)}
.verdict .headline{font-size:15px;font-weight:600;margin-bottom:2px}
.headline.pass{color:var(--pass)}.headline.fail,.headline.error{color:var(--fail)}.headline.nogate{color:var(--warn)}
.verdict ul{margin:0;padding:0;list-style:none;font-size:13px}
.verdict li.failed{color:var(--fail)}.verdict li.passed{color:var(--pass)}
.verdict .scope{color:var(--muted)}.verdict-errors li{color:var(--fail);font-weight:600}
.warnings{border-color:#d4a72c;background:var(--warn-bg)}
.warnings ul{margin:0;padding-left:18px}.warnings li{color:var(--warn)}
.facts{font-size:13px;margin:8px 0}
.status-stable{color:var(--pass)}.status-unstable{color:var(--fail)}.status-inconclusive{color:var(--warn)}
table.completions{margin-bottom:8px}
.cards{display:grid;grid-template-columns:repeat(8,1fr);gap:8px;margin-bottom:12px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:7px 10px;min-width:0}
.card .label{color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.05em}
.card .value{font-size:19px;font-weight:600;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.card .value.small{font-size:13px;font-weight:500;font-family:var(--mono);line-height:1.9}
.card .sub{color:var(--muted);font-size:12px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.card.wide{grid-column:span 2}
.card.pass .value{color:var(--pass)}.card.fail .value{color:var(--fail)}.card.warn .value{color:var(--warn)}
.panel{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 16px;margin-bottom:12px}
.panel>h2:first-child{margin-top:0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{color:var(--muted);font-weight:600;font-size:12px;white-space:nowrap;background:var(--card)}
td.nowrap{white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
th.sortable{cursor:pointer;user-select:none}
th.sortable:hover{color:var(--accent)}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
tr.hidden{display:none}
.tag{display:inline-block;padding:0 7px;border-radius:10px;font-size:11.5px;font-weight:600;line-height:18px}
.tag.pass{background:var(--pass-bg);color:var(--pass)}.tag.fail{background:var(--fail-bg);color:var(--fail)}
.tag.warn{background:var(--warn-bg);color:var(--warn)}.tag.info{background:var(--accent-bg);color:var(--accent)}
.tok{font-family:var(--mono);font-size:12.5px;background:#eff2f5;border-radius:4px;padding:0 4px;white-space:pre-wrap}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:12px;margin-bottom:12px}
.charts .panel{margin:0}
.charts svg{width:100%;height:auto;display:block}
.chart-title{font-size:13px;font-weight:600;fill:var(--fg)}
.chart-axis{stroke:#afb8c1;stroke-width:1}
.chart-grid{stroke:#eaeef2;stroke-width:1}
.chart-tick{font-size:11px;fill:var(--muted)}
.chart-label{font-size:11px;fill:var(--muted)}
.chart-value{font-size:11px;fill:var(--fg);font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px}
.chart-empty{font-size:12px;fill:var(--faint)}
.chart-bar-0{fill:var(--s1)}.chart-bar-1{fill:var(--s2)}.chart-bar-2{fill:var(--s3)}
.chart-line-0{stroke:var(--s1);stroke-width:1.5;fill:none}.chart-line-1{stroke:var(--s2);stroke-width:1.5;fill:none}
.chart-line-2{stroke:var(--s3);stroke-width:1.5;fill:none}
.chart-dot-0{fill:var(--s1)}.chart-dot-1{fill:var(--s2)}.chart-dot-2{fill:var(--s3)}
.chart-threshold{stroke:var(--fail);stroke-width:1.2;stroke-dasharray:4 3}
.chart-threshold-label{font-size:11px;fill:var(--fail);font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px}
.chart-marker{stroke:var(--warn);stroke-width:1.2;stroke-dasharray:2 2}
.chart-marker-label{font-size:11px;fill:var(--warn);font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px}
.chart-reference{stroke:var(--faint);stroke-width:1;stroke-dasharray:5 4}
.chart-reference-label{font-size:11px;fill:var(--muted);paint-order:stroke;stroke:#fff;stroke-width:3px}
.chart-legend{font-size:11px;fill:var(--muted)}
.filters{display:flex;gap:14px;align-items:center;margin-bottom:8px;font-size:13px}
.filters input[type=search]{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:6px;width:260px}
details.prompt{background:var(--card);border:1px solid var(--line);border-radius:10px;margin-bottom:8px}
details.prompt>summary{cursor:pointer;padding:8px 14px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
details.prompt>summary .id{font-family:var(--mono);font-weight:600}
details.prompt .body{padding:4px 16px 14px;border-top:1px solid #eaeef2}
.tree,.tree ul{list-style:none;margin:0;padding-left:18px}
.tree{padding-left:0}
.tree li{position:relative;padding:2px 0 2px 14px;border-left:1px solid var(--line)}
.tree li:last-child{border-left-color:transparent}
.tree li::before{content:"";position:absolute;left:-1px;top:0;width:12px;height:13px;
border-left:1px solid var(--line);border-bottom:1px solid var(--line)}
.tree .node{display:inline-flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.tree .count{font-weight:600;font-variant-numeric:tabular-nums}
.tree .count.major{color:var(--pass)}.tree .count.minor{color:var(--fail)}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:10px;margin:8px 0}
.pair .side{border:1px solid var(--line);border-radius:8px;padding:6px 10px;min-width:0}
.pair .side h4{margin:0 0 4px;font-size:12px;color:var(--muted);font-weight:600}
.completion{font-family:var(--mono);font-size:12.5px;white-space:pre-wrap;word-break:break-word;margin:0}
.completion .shared{color:var(--faint)}
.completion mark{background:var(--fail-bg);color:var(--fail);border-radius:3px;outline:1px solid #ff8182;
font-weight:600;cursor:help}
.completion mark.ref{background:var(--pass-bg);color:var(--pass);outline-color:#4ac26b}
.spark{display:block;width:100%;max-width:780px;height:auto}
footer{color:var(--muted);font-size:12px;margin-top:24px}
@media (max-width:900px){.cards{grid-template-columns:repeat(2,1fr)}.charts,.pair{grid-template-columns:1fr}}
)css";
}

// The start of a page up to and including <body>: doctype, charset, viewport, the escaped
// title and the stylesheet.
inline std::string html_document_head(std::string_view title) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<title>";
  out += html_escape(title);
  out += "</title>\n<style>";
  out += html_page_style();
  out += "</style>\n</head>\n<body>\n";
  return out;
}

} // namespace llmrepro::report
