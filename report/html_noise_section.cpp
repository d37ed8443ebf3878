// The HTML report's noise section: each level's noise distribution, p_flip's reliability diagram,
// and the two predictors side by side (docs/design.md "Noise and the flip probability").
#include "report/detail/html_noise_section.hpp"

#include <fmt/format.h>

#include "core/cache_state.hpp"
#include "report/detail/flip_summary.hpp"
#include "report/detail/html_style.hpp"
#include "report/detail/svg_chart.hpp"

namespace llmrepro::report {
namespace {

// The decade bins' names, as the chart's categories.
std::vector<std::string> decade_names() {
  std::vector<std::string> names{"0"};
  for (double upper : core::k_noise_decades) names.push_back(fmt::format("\u2264{:g}", upper));
  names.push_back(">1");
  return names;
}

// The share of each level's samples per decade of |Δgap|, the levels side by side.
std::string noise_chart(const std::vector<core::LevelSummary>& levels) {
  BarChart chart;
  chart.title = "Noise per level: |\u0394gap| between runs sharing a context";
  chart.x_label = "|\u0394gap| (nats)";
  chart.y_label = "share of positions";
  chart.percent = true;
  chart.categories = decade_names();
  chart.empty_message = "No position was compared: no noise sample.";
  for (const auto& level : levels) {
    if (level.noise.positions == 0) continue;
    BarSeries series{fmt::format("c={}", level.concurrency), {}};
    for (int count : level.noise.decade_counts)
      series.values.push_back(static_cast<double>(count) / level.noise.positions);
    chart.series.push_back(std::move(series));
  }
  if (chart.series.empty()) chart.categories.clear();
  return render_bar_chart(chart);
}

// Mean predicted against observed unstable share per bin, beside the diagonal.
std::string reliability_chart(const core::FlipCalibration& calibration) {
  LineChart chart;
  chart.title = "Reliability of p_flip";
  chart.x_label = "predicted p_flip (bin mean)";
  chart.y_label = "observed unstable share";
  chart.empty_message = "No prompt could be scored.";
  LineSeries observed{"p_flip", {}, {}, true};
  for (const auto& bin : calibration.reliability) {
    if (!bin.mean_predicted || !bin.observed_rate) continue;
    observed.x.push_back(*bin.mean_predicted);
    observed.y.push_back(*bin.observed_rate);
  }
  if (observed.x.empty()) return render_line_chart(chart);
  chart.series.push_back({"perfect calibration", {0.0, 1.0}, {0.0, 1.0}, false});
  chart.series.push_back(std::move(observed));
  return render_line_chart(chart);
}

std::string reliability_table(const core::FlipCalibration& calibration) {
  std::string out = "<table class=\"reliability\"><thead><tr><th>p_flip bin</th>"
                    "<th class=\"num\">prompts</th><th class=\"num\">mean predicted</th>"
                    "<th class=\"num\">observed unstable</th></tr></thead><tbody>";
  for (const auto& bin : calibration.reliability) {
    if (bin.items == 0) continue;
    out += fmt::format("<tr><td>[{:.1f}, {:.1f}{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{:.3f}</td><td class=\"num\">{} ({:.0f}%)</td></tr>",
                       bin.lower, bin.upper, bin.upper >= 1.0 ? "]" : ")", bin.items,
                       bin.mean_predicted.value_or(0.0), bin.observed,
                       100.0 * bin.observed_rate.value_or(0.0));
  }
  return out + "</tbody></table>";
}

std::string noise_table(const std::vector<core::LevelSummary>& levels) {
  std::string out = "<table class=\"noise\"><thead><tr><th class=\"num\">concurrency</th>"
                    "<th class=\"num\">positions</th><th class=\"num\">moved</th>"
                    "<th class=\"num\">median</th><th class=\"num\">p90</th>"
                    "<th class=\"num\">p99</th><th class=\"num\">max</th></tr></thead><tbody>";
  const auto value = [](const std::optional<double>& v) {
    return v ? nats_text(*v) : std::string("\u2013");
  };
  for (const auto& level : levels)
    out += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                       level.concurrency, level.noise.positions, level.noise.nonzero,
                       value(level.noise.median), value(level.noise.p90), value(level.noise.p99),
                       value(level.noise.max));
  return out + "</tbody></table>";
}

} // namespace

std::string render_noise_section(const core::AuditReport& report) {
  const core::AuditSummary& s = report.analysis.summary;
  const double tau = report.data != nullptr ? report.data->config.analysis.fragile_gap
                                            : core::AnalysisConfig{}.fragile_gap;
  std::string out = "<section class=\"panel\" id=\"noise\"><h2>Noise and flip probability</h2>";
  out += fmt::format("<p class=\"flip-predictors\">{}</p>",
                     html_escape(predictor_comparison_line(s.flip_calibration, tau)));
  out += "<p class=\"muted\">Noise: |\u0394gap| of each run against its prompt's reference run "
         "where they share the context. p_flip reads the reference's gaps in the window against "
         "each level's noise; both predictors are scored against the prompts that were "
         "observed unstable.</p>";
  if (const std::string cache = core::cache_state_line(s.by_concurrency); !cache.empty())
    out += fmt::format("<p id=\"cache-state\">{}</p>", html_escape(cache));
  out += noise_table(s.by_concurrency);
  out += "<div class=\"charts\">" + noise_chart(s.by_concurrency) +
         reliability_chart(s.flip_calibration) + "</div>";
  out += reliability_table(s.flip_calibration);
  return out + "</section>\n";
}

} // namespace llmrepro::report
