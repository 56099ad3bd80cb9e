// Minimal SVG charts drawn by ember itself (no plotting dependency): grouped bars with spread whiskers
// and per-bar notes, and a line chart. Output is standalone SVG 1.1 with explicit width/height and a
// white background, so it renders the same in a browser, a Markdown viewer, or an <img> tag.
// Pure functions: data in, text out.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ember::bench {

struct Bar {
  std::string series;               // legend entry / colour, e.g. "ember"
  double value = 0;                 // NaN or negative: drawn as "n/a"
  std::optional<double> lo, hi;     // whisker: min and max of the per-run samples
  std::string label;                // printed above the bar (defaults to the value)
  bool faded = false;               // drawn translucent: unstable or preflight-failed rows
};

struct BarGroup {
  std::string label;                // x-axis label, e.g. the model file
  std::string note;                 // second line under the label, e.g. "ember/llama.cpp 1.23x"
  std::vector<Bar> bars;
};

struct BarChart {
  std::string title;
  std::string y_label;              // e.g. "decode tok/s (higher is faster)"
  std::vector<std::string> series;  // legend order; a bar's colour comes from its series' index
  std::vector<BarGroup> groups;
  // Optional palette slot per series (same order), so a stack keeps its colour across charts even
  // when another stack is absent.
  std::vector<size_t> series_colours;
};

struct LineSeries {
  std::string name;
  std::vector<double> x, y;         // same length; NaN y values leave a gap
};

struct LineChart {
  std::string title;
  std::string x_label, y_label;
  std::vector<LineSeries> series;
};

std::string RenderBarChart(const BarChart& chart);
std::string RenderLineChart(const LineChart& chart);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string XmlEscape(const std::string& s);

// A "nice" axis maximum >= v (1, 2, 2.5 or 5 times a power of ten).
double NiceCeil(double v);

}  // namespace ember::bench
