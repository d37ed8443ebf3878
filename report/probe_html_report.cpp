#include "report/probe_html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "report/detail/html_style.hpp"
#include "report/detail/svg_chart.hpp"

namespace llmrepro::report {

namespace {

// Probe-specific additions to the shared stylesheet.
constexpr std::string_view k_probe_style =
    "<style>table.probe{border-collapse:collapse;width:100%;background:var(--card);"
    "font-variant-numeric:tabular-nums;margin-bottom:8px}"
    "table.probe td,table.probe th{border-bottom:1px solid #eaeef2;padding:3px "
    "8px;text-align:right}"
    "table.probe td:first-child,table.probe th:first-child{text-align:left}"
    "table.probe tr.changed td{background:var(--warn-bg)}"
    ".status-ok{color:var(--pass)}.status-failed{color:var(--fail)}.status-skipped{color:var(--"
    "muted)}"
    ".held code{margin-right:10px}</style>\n";

std::string value_text(const core::ProbeValue& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return std::to_string(*integer);
  if (const auto* real = std::get_if<double>(&value)) {
    if (*real >= 1e9) return "\xE2\x88\x9E"; // the open-ended top gap bin
    return fmt::format("{:g}", *real);
  }
  return std::get<std::string>(value);
}

std::string number_text(double value) {
  if (value == 0.0) return "0";
  if (std::fabs(value) >= 1e6 || std::fabs(value) < 1e-4) return fmt::format("{:.3g}", value);
  return fmt::format("{:.4g}", value);
}

std::string probe_percent_text(double fraction) {
  if (fraction == 0.0) return "0";
  return fmt::format("{:.3g}%", fraction * 100.0);
}

const core::ProbeMeasure* find_measure(const core::ProbeRow& row, const std::string& name) {
  for (const auto& measure : row.measures)
    if (measure.name == name) return &measure;
  return nullptr;
}

const core::ProbeValue* find_param(const core::ProbeRow& row, const std::string& name) {
  for (const auto& param : row.params)
    if (param.name == name) return &param.value;
  return nullptr;
}

// Column names in first-seen order over all rows.
template <typename Getter>
std::vector<std::string> union_names(const core::ProbeExperiment& e, Getter names) {
  std::vector<std::string> out;
  for (const auto& row : e.rows)
    for (const auto& name : names(row))
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

std::string experiment_table(const core::ProbeExperiment& experiment) {
  const auto params = union_names(experiment, [](const core::ProbeRow& row) {
    std::vector<std::string> names;
    for (const auto& param : row.params) names.push_back(param.name);
    return names;
  });
  const auto measures = union_names(experiment, [](const core::ProbeRow& row) {
    std::vector<std::string> names;
    for (const auto& measure : row.measures) names.push_back(measure.name);
    return names;
  });
  const bool any_fp32 =
      std::any_of(experiment.rows.begin(), experiment.rows.end(),
                  [](const core::ProbeRow& row) { return row.fp32_changed_frac.has_value(); });
  std::string out = "<table class=\"probe\"><thead><tr><th>variant</th>";
  for (const auto& name : params) out += "<th>" + html_escape(name) + "</th>";
  out += "<th>outputs</th><th>changed</th><th>max abs</th><th>max ULP</th>"
         "<th title=\"outputs at 0 / 1 / 2 / 3-7 / 8+ ULP\">ULP histogram</th>";
  if (any_fp32) out += "<th>fp32 changed</th>";
  for (const auto& name : measures) out += "<th>" + html_escape(name) + "</th>";
  const bool any_digest =
      std::any_of(experiment.rows.begin(), experiment.rows.end(),
                  [](const core::ProbeRow& row) { return !row.sha256.empty(); });
  if (any_digest) out += "<th title=\"SHA-256 of the output's bits\">SHA-256</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : experiment.rows) {
    out += row.changed_frac > 0.0 ? "<tr class=\"changed\">" : "<tr>";
    out += "<td><code>" + html_escape(row.variant) + "</code></td>";
    for (const auto& name : params) {
      const core::ProbeValue* value = find_param(row, name);
      out += "<td>" + (value ? html_escape(value_text(*value)) : std::string()) + "</td>";
    }
    out +=
        fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {} / {} / {} / {}</td>",
                    row.elements, probe_percent_text(row.changed_frac), number_text(row.max_abs),
                    number_text(row.max_ulp), row.ulp_histogram[0], row.ulp_histogram[1],
                    row.ulp_histogram[2], row.ulp_histogram[3], row.ulp_histogram[4]);
    if (any_fp32)
      out += "<td>" +
             (row.fp32_changed_frac ? probe_percent_text(*row.fp32_changed_frac)
                                    : std::string("n/a")) +
             "</td>";
    for (const auto& name : measures) {
      const core::ProbeMeasure* measure = find_measure(row, name);
      out += "<td>" + (measure ? number_text(measure->value) : std::string()) + "</td>";
    }
    // The first 16 hex digits, the whole digest on hover.
    if (any_digest)
      out += "<td><code title=\"" + html_escape(row.sha256) + "\">" +
             html_escape(row.sha256.substr(0, 16)) + "</code></td>";
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

// Flip rate per observed-gap bin, one line per perturbation model that flipped at all.
std::string flip_chart(const core::ProbeResult& result) {
  LineChart chart;
  chart.title = "Argmax flip rate vs observed top-1/top-2 gap (E6)";
  chart.x_label = "observed gap (nats, log scale; ties drawn at 1e-5)";
  chart.y_label = "flip rate";
  chart.log_x = true;
  chart.log_floor = 1e-5;
  chart.marker_x = result.recommendation.default_tau;
  chart.marker_label = fmt::format("default \xCF\x84 = {:g}", result.recommendation.default_tau);
  chart.empty_message = "no flip experiment in this result";
  chart.width = 760;
  chart.height = 300;
  for (const auto& experiment : result.experiments) {
    if (experiment.id != "E6") continue;
    for (const auto& row : experiment.rows) {
      const core::ProbeValue* low = find_param(row, "gap_low");
      const core::ProbeValue* high = find_param(row, "gap_high");
      const core::ProbeMeasure* rate = find_measure(row, "flip_rate");
      const core::ProbeMeasure* steps = find_measure(row, "steps");
      if (!low || !high || !rate || !steps || steps->value == 0.0) continue;
      const double lo = std::get<double>(*low);
      const double hi = std::get<double>(*high);
      // A bin is drawn at its geometric middle; ties at 0 fall to the floor; the top bin at 2x.
      const double x = hi == 0.0   ? 0.0
                       : lo == 0.0 ? hi / 2.0
                       : hi >= 1e9 ? lo * 2.0
                                   : std::sqrt(lo * hi);
      auto series = std::find_if(chart.series.begin(), chart.series.end(),
                                 [&](const LineSeries& s) { return s.name == row.variant; });
      if (series == chart.series.end()) {
        chart.series.push_back({row.variant, {}, {}, true});
        series = chart.series.end() - 1;
      }
      series->x.push_back(x);
      series->y.push_back(rate->value);
    }
  }
  // Three colours in the shared style: keep the first three series that flipped at all.
  std::vector<LineSeries> kept;
  for (auto& series : chart.series)
    if (kept.size() < 3 &&
        std::any_of(series.y.begin(), series.y.end(), [](double y) { return y > 0.0; }))
      kept.push_back(std::move(series));
  chart.series = std::move(kept);
  return render_line_chart(chart);
}

std::string card(std::string_view label, std::string_view value) {
  return "<div class=\"card\"><div class=\"label\">" + html_escape(label) +
         "</div><div class=\"value small\">" + html_escape(value.empty() ? "n/a" : value) +
         "</div></div>";
}

} // namespace

std::string render_probe_html(const core::ProbeResult& result) {
  std::string out = html_document_head("llmrepro gpu-probe: " + result.device.name);
  out += k_probe_style;
  out += "<main>\n<header class=\"page\"><h1>llmrepro gpu-probe</h1><span class=\"meta\">";
  out += html_escape(fmt::format("backend {} \xC2\xB7 dtype {}{}", result.backend, result.dtype,
                                 result.quick ? " \xC2\xB7 quick" : ""));
  out += "</span></header>\n";

  bool self_test_ok = false;
  for (const auto& experiment : result.experiments)
    if (experiment.id == "E0") self_test_ok = experiment.status == core::ProbeStatus::ok;
  out += self_test_ok
             ? "<div class=\"verdict pass\"><span class=\"badge\">SELF-TEST OK</span><ul>"
             : "<div class=\"verdict fail\"><span class=\"badge\">SELF-TEST FAILED</span><ul>";
  out += "<li>" + html_escape(result.backend_reason) + "</li>";
  out += "<li>" + html_escape(result.recommendation.text) + "</li></ul></div>\n";

  out += "<div class=\"cards\">";
  out += "<div class=\"card wide\"><div class=\"label\">device</div><div class=\"value small\">" +
         html_escape(result.device.name) + "</div></div>";
  out += card("SMs", std::to_string(result.device.sm_count));
  out += card("driver", result.device.driver);
  out += card("CUDA", result.device.cuda);
  out += card("cuBLAS", result.device.cublas);
  out += "</div>\n";

  out += "<h2>Flip rate against gap</h2>\n";
  out += flip_chart(result);
  out += "<p>" + html_escape(result.recommendation.text) + "</p>\n";

  for (const auto& experiment : result.experiments) {
    const char* status = core::to_string(experiment.status);
    out += fmt::format(
        "<h2 id=\"{0}\">{0} \xE2\x80\x94 {1} <span class=\"status-{2}\">({2})</span></h2>\n",
        html_escape(experiment.id), html_escape(experiment.title), status);
    if (!experiment.held.empty()) {
      out += "<p class=\"held muted\">held: ";
      for (const auto& param : experiment.held)
        out += "<code>" + html_escape(param.name + " = " + value_text(param.value)) + "</code>";
      out += "</p>\n";
    }
    for (const auto& note : experiment.notes)
      out += "<p class=\"muted\">" + html_escape(note) + "</p>\n";
    if (!experiment.rows.empty()) out += experiment_table(experiment);
  }
  out += "<footer>ULP: spacing of the output dtype at the reference value. Changed rows are "
         "shaded. Schema " +
         html_escape(result.schema) + ".</footer>\n</main>\n</body>\n</html>\n";
  return out;
}

} // namespace llmrepro::report
