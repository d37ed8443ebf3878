// Inline SVG charts drawn by our own code (no chart library, nothing fetched): grouped bar
// charts and line charts with threshold and marker lines, styled by the chart-* classes of
// html_style.hpp. Every text that reaches the SVG is escaped.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llmrepro::report {

struct BarSeries {
  std::string name;           // legend entry; no legend when the chart has one series
  std::vector<double> values; // one per category
};

struct BarChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  // Labels at the category boundaries (categories.size() + 1 of them), for histograms whose
  // bins are ranges; empty: each category's name under its bars.
  std::vector<std::string> edge_labels;
  // Text above each category's group; empty: each bar's value.
  std::vector<std::string> value_labels;
  // A dashed horizontal line at this y value, labelled.
  std::optional<double> reference_y;
  std::string reference_label;
  // A red vertical line at a boundary between categories (0: left edge of the first category,
  // categories.size(): right edge of the last), labelled; for thresholds between bins.
  std::optional<double> threshold_edge;
  std::string threshold_label;
  bool percent = false;      // values are shares in [0, 1]; ticks and labels in %
  bool counts = false;       // values are counts: no fractional ticks
  std::string empty_message; // drawn instead of bars when there are no categories or all are 0
  int width = 560;
  int height = 250;
};

// The chart as an <svg> element, or the empty message in an <svg> of the same size.
std::string render_bar_chart(const BarChart& chart);

struct LineSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y; // same length as x
  bool dots = false;     // mark each point
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<LineSeries> series;
  bool log_x = false;
  bool log_y = false;
  double log_floor = 1e-3;           // on a log axis, values below this are drawn at it
  std::optional<double> threshold_y; // red dashed horizontal line (a threshold such as τ)
  std::string threshold_label;
  std::optional<double> marker_x; // amber vertical line (a position such as a divergence)
  std::string marker_label;
  bool compact = false; // small multiple: no title, fewer ticks
  std::string empty_message;
  int width = 560;
  int height = 250;
};

// The chart as an <svg> element.
std::string render_line_chart(const LineChart& chart);

} // namespace llmrepro::report
