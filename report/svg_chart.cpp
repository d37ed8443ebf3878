// SVG charts. Coordinates are computed in doubles and printed with one decimal, so a chart's
// markup is a pure function of its data (the tests compare markup).
#include "report/detail/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "report/detail/html_style.hpp"

namespace llmrepro::report {
namespace {

struct Frame {
  double left = 52.0;
  double right = 14.0;
  double top = 30.0;
  double bottom = 44.0;
  double width = 0.0;
  double height = 0.0;
  double plot_width() const { return width - left - right; }
  double plot_height() const { return height - top - bottom; }
};

std::string num(double value) { return fmt::format("{:.1f}", value); }

// A tick label: integers without decimals, small numbers with enough digits to differ.
std::string tick_text(double value, bool percent) {
  if (percent) return fmt::format("{:g}%", std::round(value * 1000.0) / 10.0);
  if (value == std::round(value) && std::fabs(value) < 1e9) return fmt::format("{:.0f}", value);
  return fmt::format("{:g}", value);
}

// "Nice" linear ticks from 0 (or lo) to at least hi: steps of 1, 2 or 5 times a power of ten.
std::vector<double> linear_ticks(double lo, double hi, int target, double min_step = 0.0) {
  if (!(hi > lo) || !std::isfinite(hi - lo)) hi = lo + 1.0;
  const double raw = std::max((hi - lo) / std::max(target, 1), min_step);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step) * step;
  for (double t = first; t < hi + step * 0.999; t += step)
    ticks.push_back(std::round(t / step) * step);
  return ticks;
}

std::string open_svg(const Frame& frame, const std::string& title) {
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"{}\" class=\"chart\">",
      frame.width, frame.height, frame.width, frame.height, html_escape(title));
  out += "<title>" + html_escape(title) + "</title>";
  return out;
}

std::string empty_svg(const Frame& frame, const std::string& title, const std::string& message) {
  std::string out = open_svg(frame, title);
  if (!title.empty()) {
    out += fmt::format("<text class=\"chart-title\" x=\"{}\" y=\"18\">{}</text>", num(frame.left),
                       html_escape(title));
  }
  out +=
      fmt::format("<text class=\"chart-empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                  num(frame.width / 2.0), num(frame.height / 2.0), html_escape(message));
  return out + "</svg>";
}

std::string axis_labels(const Frame& frame, const std::string& x_label,
                        const std::string& y_label) {
  std::string out;
  if (!x_label.empty()) {
    out += fmt::format(
        "<text class=\"chart-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        num(frame.left + frame.plot_width() / 2.0), num(frame.height - 6.0), html_escape(x_label));
  }
  if (!y_label.empty()) {
    const double y = frame.top + frame.plot_height() / 2.0;
    out += fmt::format("<text class=\"chart-label\" x=\"12\" y=\"{}\" text-anchor=\"middle\" "
                       "transform=\"rotate(-90 12 {})\">{}</text>",
                       num(y), num(y), html_escape(y_label));
  }
  return out;
}

std::string legend(const Frame& frame, const std::vector<std::string>& names, const char* kind) {
  std::string out;
  double x = frame.width - frame.right;
  // Right-aligned, last entry rightmost: walk backwards.
  for (std::size_t i = names.size(); i-- > 0;) {
    const double text_width = 6.5 * static_cast<double>(names[i].size());
    x -= text_width;
    out += fmt::format("<text class=\"chart-legend\" x=\"{}\" y=\"36\">{}</text>", num(x),
                       html_escape(names[i]));
    x -= 14.0;
    out += fmt::format(
        "<rect class=\"chart-{}-{}\" x=\"{}\" y=\"27\" width=\"10\" height=\"10\" rx=\"2\"/>", kind,
        i % 3, num(x));
    x -= 12.0;
  }
  return out;
}

} // namespace

std::string render_bar_chart(const BarChart& chart) {
  Frame frame;
  frame.width = chart.width;
  frame.height = chart.height;
  // A figure that is no finite number (a rate over no time) has no height to draw: no bar.
  const auto drawn = [](double v) { return std::isfinite(v) ? v : 0.0; };
  double max_value = 0.0;
  for (const BarSeries& series : chart.series) {
    for (double v : series.values) max_value = std::max(max_value, drawn(v));
  }
  if (chart.categories.empty() || (max_value <= 0.0 && !chart.empty_message.empty())) {
    return empty_svg(frame, chart.title, chart.empty_message);
  }
  if (chart.reference_y) max_value = std::max(max_value, *chart.reference_y);
  if (chart.series.size() > 1) frame.top = 48.0; // room for the legend line
  const std::vector<double> ticks = linear_ticks(
      0.0, chart.percent ? std::min(max_value, 1.0) : max_value, 4, chart.counts ? 1.0 : 0.0);
  // Headroom above the tallest bar for its label.
  const double y_max = std::max(ticks.back(), max_value * 1.12);
  const auto y_of = [&](double v) { return frame.top + frame.plot_height() * (1.0 - v / y_max); };

  std::string out = open_svg(frame, chart.title);
  out += fmt::format("<text class=\"chart-title\" x=\"{}\" y=\"18\">{}</text>", num(frame.left),
                     html_escape(chart.title));
  if (chart.series.size() > 1) {
    std::vector<std::string> names;
    for (const BarSeries& series : chart.series) names.push_back(series.name);
    out += legend(frame, names, "bar");
  }
  for (double t : ticks) {
    const double y = y_of(t);
    out += fmt::format("<line class=\"chart-grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(frame.left), num(y), num(frame.width - frame.right), num(y));
    out += fmt::format("<text class=\"chart-tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                       num(frame.left - 6.0), num(y + 4.0), tick_text(t, chart.percent));
  }
  const double slot = frame.plot_width() / static_cast<double>(chart.categories.size());
  const double group = slot * 0.72;
  const double bar = group / static_cast<double>(std::max<std::size_t>(chart.series.size(), 1));
  const std::size_t label_every =
      std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(44.0 / slot)));
  for (std::size_t c = 0; c < chart.categories.size(); ++c) {
    const double x0 = frame.left + slot * static_cast<double>(c) + (slot - group) / 2.0;
    double group_top = frame.top + frame.plot_height();
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
      const double v = c < chart.series[s].values.size() ? drawn(chart.series[s].values[c]) : 0.0;
      const double y = y_of(v);
      group_top = std::min(group_top, y);
      const std::string tip = chart.series.size() > 1 ? chart.series[s].name + ": " : std::string();
      out += fmt::format(
          "<rect class=\"chart-bar-{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\">"
          "<title>{}{} {}</title></rect>",
          s % 3, num(x0 + bar * static_cast<double>(s)), num(y), num(std::max(bar - 1.0, 1.0)),
          num(frame.top + frame.plot_height() - y), html_escape(tip),
          html_escape(chart.categories[c]), tick_text(v, chart.percent));
      if (chart.value_labels.empty() && chart.series.size() == 1 && slot >= 28.0 && v > 0.0) {
        out += fmt::format(
            "<text class=\"chart-value\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            num(x0 + bar / 2.0), num(y - 4.0), tick_text(v, chart.percent));
      }
    }
    if (c < chart.value_labels.size() && !chart.value_labels[c].empty()) {
      out += fmt::format(
          "<text class=\"chart-value\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
          num(x0 + group / 2.0), num(group_top - 4.0), html_escape(chart.value_labels[c]));
    }
    if (chart.edge_labels.empty() && c % label_every == 0) {
      out += fmt::format(
          "<text class=\"chart-tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
          num(x0 + group / 2.0), num(frame.top + frame.plot_height() + 15.0),
          html_escape(chart.categories[c]));
    }
  }
  const double base = frame.top + frame.plot_height();
  for (std::size_t e = 0; e < chart.edge_labels.size(); e += label_every) {
    const double x = frame.left + slot * static_cast<double>(e);
    out += fmt::format("<line class=\"chart-axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(x), num(base), num(x), num(base + 4.0));
    out +=
        fmt::format("<text class=\"chart-tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    num(x), num(base + 15.0), html_escape(chart.edge_labels[e]));
  }
  out += fmt::format("<line class=\"chart-axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                     num(frame.left), num(base), num(frame.width - frame.right), num(base));
  if (chart.reference_y) {
    const double y = y_of(*chart.reference_y);
    out += fmt::format("<line class=\"chart-reference\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(frame.left), num(y), num(frame.width - frame.right), num(y));
    // The label goes on the title line, keyed by a dash of the same line: drawn beside the line
    // itself it would run over any bar that reaches it.
    const double end = frame.width - frame.right;
    const double text_width = 6.2 * static_cast<double>(chart.reference_label.size());
    out += fmt::format("<line class=\"chart-reference\" x1=\"{}\" y1=\"14\" x2=\"{}\" y2=\"14\"/>",
                       num(end - text_width - 24.0), num(end - text_width - 6.0));
    out += fmt::format(
        "<text class=\"chart-reference-label\" x=\"{}\" y=\"18\" text-anchor=\"end\">{}</text>",
        num(end), html_escape(chart.reference_label));
  }
  if (chart.threshold_edge) {
    const double x = frame.left + slot * *chart.threshold_edge;
    out += fmt::format("<line class=\"chart-threshold\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(x), num(frame.top - 4.0), num(x), num(base));
    out += fmt::format("<text class=\"chart-threshold-label\" x=\"{}\" y=\"{}\">{}</text>",
                       num(x + 4.0), num(frame.top + 8.0), html_escape(chart.threshold_label));
  }
  out += axis_labels(frame, chart.x_label, chart.y_label);
  return out + "</svg>";
}

std::string render_line_chart(const LineChart& chart) {
  Frame frame;
  frame.width = chart.width;
  frame.height = chart.height;
  if (chart.compact) {
    frame.top = 10.0;
    frame.bottom = 30.0;
    frame.left = 46.0;
  }
  bool any = false;
  double x_lo = INFINITY;
  double x_hi = -INFINITY;
  double y_hi = 0.0;
  const auto tx = [&](double x) {
    return chart.log_x ? std::log10(std::max(x, chart.log_floor)) : x;
  };
  const auto ty = [&](double y) {
    return chart.log_y ? std::log10(std::max(y, chart.log_floor)) : y;
  };
  for (const LineSeries& series : chart.series) {
    for (std::size_t i = 0; i < series.x.size() && i < series.y.size(); ++i) {
      any = true;
      x_lo = std::min(x_lo, tx(series.x[i]));
      x_hi = std::max(x_hi, tx(series.x[i]));
      y_hi = std::max(y_hi, series.y[i]);
    }
  }
  if (!any)
    return empty_svg(frame, chart.compact ? std::string() : chart.title, chart.empty_message);
  if (chart.marker_x) {
    x_lo = std::min(x_lo, tx(*chart.marker_x));
    x_hi = std::max(x_hi, tx(*chart.marker_x));
  }
  if (chart.threshold_y) y_hi = std::max(y_hi, *chart.threshold_y);
  if (!(x_hi > x_lo)) x_hi = x_lo + 1.0;

  std::vector<double> y_ticks; // in the transformed space
  double y_lo_t = 0.0;
  double y_hi_t = 0.0;
  if (chart.log_y) {
    y_lo_t = std::log10(chart.log_floor);
    y_hi_t = std::ceil(std::log10(std::max(y_hi, chart.log_floor * 10.0)));
    const int step = (y_hi_t - y_lo_t) > 4.0 ? 2 : 1;
    for (double t = y_lo_t; t <= y_hi_t + 1e-9; t += step) y_ticks.push_back(t);
  } else {
    y_ticks = linear_ticks(0.0, y_hi, chart.compact ? 2 : 4);
    y_hi_t = std::max(y_ticks.back(), y_hi);
  }
  const auto x_of = [&](double x) {
    return frame.left + frame.plot_width() * (tx(x) - x_lo) / (x_hi - x_lo);
  };
  const auto y_of = [&](double y) {
    const double t = std::clamp(ty(y), y_lo_t, y_hi_t);
    return frame.top + frame.plot_height() * (1.0 - (t - y_lo_t) / (y_hi_t - y_lo_t));
  };

  std::string out = open_svg(frame, chart.title);
  if (!chart.compact) {
    out += fmt::format("<text class=\"chart-title\" x=\"{}\" y=\"18\">{}</text>", num(frame.left),
                       html_escape(chart.title));
  }
  if (chart.series.size() > 1) {
    std::vector<std::string> names;
    for (const LineSeries& series : chart.series) names.push_back(series.name);
    out += legend(frame, names, "dot");
  }
  for (double t : y_ticks) {
    const double y = frame.top + frame.plot_height() * (1.0 - (t - y_lo_t) / (y_hi_t - y_lo_t));
    out += fmt::format("<line class=\"chart-grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(frame.left), num(y), num(frame.width - frame.right), num(y));
    const double value = chart.log_y ? std::pow(10.0, t) : t;
    out += fmt::format("<text class=\"chart-tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                       num(frame.left - 6.0), num(y + 4.0), tick_text(value, false));
  }
  std::vector<double> x_ticks;
  if (chart.log_x) {
    for (double t = std::ceil(x_lo); t <= x_hi + 1e-9; t += 1.0)
      x_ticks.push_back(std::pow(10.0, t));
  } else {
    for (double t : linear_ticks(x_lo, x_hi, chart.compact ? 8 : 6)) {
      if (t >= x_lo - 1e-9 && t <= x_hi + 1e-9) x_ticks.push_back(t);
    }
  }
  const double base = frame.top + frame.plot_height();
  for (double t : x_ticks) {
    out +=
        fmt::format("<text class=\"chart-tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    num(x_of(t)), num(base + 14.0), tick_text(t, false));
  }
  out += fmt::format("<line class=\"chart-axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                     num(frame.left), num(base), num(frame.width - frame.right), num(base));
  if (chart.threshold_y) {
    const double y = y_of(*chart.threshold_y);
    out += fmt::format("<line class=\"chart-threshold\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(frame.left), num(y), num(frame.width - frame.right), num(y));
    out += fmt::format(
        "<text class=\"chart-threshold-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        num(frame.width - frame.right - 2.0), num(y - 4.0), html_escape(chart.threshold_label));
  }
  if (chart.marker_x) {
    const double x = x_of(*chart.marker_x);
    out += fmt::format("<line class=\"chart-marker\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(x), num(frame.top), num(x), num(base));
    out += fmt::format("<text class=\"chart-marker-label\" x=\"{}\" y=\"{}\">{}</text>",
                       num(x + 4.0), num(frame.top + 10.0), html_escape(chart.marker_label));
  }
  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    const LineSeries& series = chart.series[s];
    std::string points;
    for (std::size_t i = 0; i < series.x.size() && i < series.y.size(); ++i) {
      if (!points.empty()) points += ' ';
      points += num(x_of(series.x[i])) + "," + num(y_of(series.y[i]));
    }
    out += fmt::format("<polyline class=\"chart-line-{}\" points=\"{}\"/>", s % 3, points);
    if (series.dots) {
      for (std::size_t i = 0; i < series.x.size() && i < series.y.size(); ++i) {
        out += fmt::format("<circle class=\"chart-dot-{}\" cx=\"{}\" cy=\"{}\" r=\"2.5\"><title>{} "
                           "{}: {}</title></circle>",
                           s % 3, num(x_of(series.x[i])), num(y_of(series.y[i])),
                           html_escape(series.name), tick_text(series.x[i], false),
                           fmt::format("{:.4g}", series.y[i]));
      }
    }
  }
  out += axis_labels(frame, chart.x_label, chart.compact ? std::string() : chart.y_label);
  return out + "</svg>";
}

} // namespace llmrepro::report
