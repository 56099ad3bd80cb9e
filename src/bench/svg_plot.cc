#include "bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ember::bench {
namespace {

// Colour-blind-safe palette (Okabe-Ito), in legend order.
const char* const kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"};
const char* Colour(size_t i) { return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

constexpr double kLeft = 70, kRight = 20, kTop = 50, kBottom = 70, kPlotH = 240;

std::string F(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string ShortNum(double v) {
  char buf[32];
  if (v >= 1000) std::snprintf(buf, sizeof(buf), "%.0f", v);
  else if (v >= 100) std::snprintf(buf, sizeof(buf), "%.1f", v);
  else std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

std::string Text(double x, double y, const std::string& s, const char* anchor = "middle", int size = 11,
                 const char* extra = "") {
  return "<text x=\"" + F(x) + "\" y=\"" + F(y) + "\" text-anchor=\"" + anchor + "\" font-size=\"" +
         std::to_string(size) + "\" font-family=\"sans-serif\" fill=\"#222\"" + extra + ">" + XmlEscape(s) + "</text>\n";
}

std::string Line(double x1, double y1, double x2, double y2, const char* stroke, double width = 1) {
  return "<line x1=\"" + F(x1) + "\" y1=\"" + F(y1) + "\" x2=\"" + F(x2) + "\" y2=\"" + F(y2) + "\" stroke=\"" +
         stroke + "\" stroke-width=\"" + F(width) + "\"/>\n";
}

std::string Header(double w, double h, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + F(w) + "\" height=\"" + F(h) +
         "\" viewBox=\"0 0 " + F(w) + " " + F(h) + "\">\n<title>" + XmlEscape(title) + "</title>\n" +
         "<rect x=\"0\" y=\"0\" width=\"" + F(w) + "\" height=\"" + F(h) + "\" fill=\"#ffffff\"/>\n" +
         Text(w / 2, 22, title, "middle", 14, " font-weight=\"bold\"");
}

// Horizontal grid lines and y tick labels for [0, ymax] over the plot area.
std::string YAxis(double ymax, double width, const std::string& label) {
  std::string s;
  for (int i = 0; i <= 4; ++i) {
    double v = ymax * i / 4;
    double y = kTop + kPlotH - kPlotH * i / 4;
    s += Line(kLeft, y, kLeft + width, y, i == 0 ? "#444" : "#ddd");
    char tick[32];
    const double step = ymax / 4;
    std::snprintf(tick, sizeof(tick), step == std::floor(step) ? "%.0f" : step >= 1 ? "%.1f" : "%.2f", v);
    s += Text(kLeft - 6, y + 4, tick, "end", 10);
  }
  s += "<text x=\"16\" y=\"" + F(kTop + kPlotH / 2) + "\" transform=\"rotate(-90 16 " + F(kTop + kPlotH / 2) +
       ")\" text-anchor=\"middle\" font-size=\"11\" font-family=\"sans-serif\" fill=\"#222\">" + XmlEscape(label) +
       "</text>\n";
  return s;
}

std::string Legend(const std::vector<std::string>& names, const std::vector<size_t>& colours, double x, double y) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    const size_t c = i < colours.size() ? colours[i] : i;
    s += "<rect x=\"" + F(x) + "\" y=\"" + F(y - 9) + "\" width=\"10\" height=\"10\" fill=\"" + Colour(c) + "\"/>\n";
    s += Text(x + 14, y, names[i], "start", 11);
    x += 24 + 7.0 * static_cast<double>(names[i].size());
  }
  return s;
}

// The palette slot of a series: its fixed colour when the chart gives one, else its legend position.
size_t SeriesColour(const BarChart& c, const std::string& name) {
  auto it = std::find(c.series.begin(), c.series.end(), name);
  const size_t i = static_cast<size_t>(it - c.series.begin());
  if (it == c.series.end()) return c.series.size();
  return i < c.series_colours.size() ? c.series_colours[i] : i;
}

double MaxBarValue(const BarChart& c) {
  double m = 0;
  for (const auto& g : c.groups)
    for (const auto& b : g.bars) {
      if (std::isfinite(b.value)) m = std::max(m, b.value);
      if (b.hi && std::isfinite(*b.hi)) m = std::max(m, *b.hi);
    }
  return m;
}

std::string DrawBar(const Bar& b, size_t colour, double x, double bar_w, double ymax) {
  auto ypos = [&](double v) { return kTop + kPlotH - kPlotH * std::clamp(v / ymax, 0.0, 1.0); };
  if (!std::isfinite(b.value) || b.value < 0) return Text(x + bar_w / 2, kTop + kPlotH - 4, "n/a", "middle", 9);
  std::string s = "<rect x=\"" + F(x) + "\" y=\"" + F(ypos(b.value)) + "\" width=\"" + F(bar_w) + "\" height=\"" +
                  F(kTop + kPlotH - ypos(b.value)) + "\" fill=\"" + Colour(colour) + "\"" +
                  (b.faded ? " fill-opacity=\"0.35\" stroke=\"" + std::string(Colour(colour)) + "\" stroke-dasharray=\"3 2\"" : "") +
                  "/>\n";
  if (b.lo && b.hi) {  // spread whisker: min..max of the runs
    const double cx = x + bar_w / 2;
    s += Line(cx, ypos(*b.lo), cx, ypos(*b.hi), "#111", 1.2);
    s += Line(cx - 4, ypos(*b.lo), cx + 4, ypos(*b.lo), "#111", 1.2);
    s += Line(cx - 4, ypos(*b.hi), cx + 4, ypos(*b.hi), "#111", 1.2);
  }
  const double top = std::min(ypos(b.value), b.hi ? ypos(*b.hi) : ypos(b.value));
  s += Text(x + bar_w / 2, top - 4, b.label.empty() ? ShortNum(b.value) : b.label, "middle", 10);
  return s;
}

}  // namespace

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

double NiceCeil(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10 * p;
}

std::string RenderBarChart(const BarChart& c) {
  const double bar_w = 34, gap = 36;
  double plot_w = 0;
  for (const auto& g : c.groups) plot_w += static_cast<double>(std::max<size_t>(g.bars.size(), 1)) * bar_w + gap;
  plot_w = std::max(plot_w, 260.0);
  const double w = kLeft + plot_w + kRight, h = kTop + kPlotH + kBottom;
  const double ymax = NiceCeil(MaxBarValue(c) * 1.12);
  std::string s = Header(w, h, c.title) + YAxis(ymax, plot_w, c.y_label);
  double x = kLeft + gap / 2;
  for (const auto& g : c.groups) {
    const double gw = static_cast<double>(std::max<size_t>(g.bars.size(), 1)) * bar_w;
    for (size_t i = 0; i < g.bars.size(); ++i)
      s += DrawBar(g.bars[i], SeriesColour(c, g.bars[i].series), x + static_cast<double>(i) * bar_w, bar_w - 4, ymax);
    s += Text(x + gw / 2, kTop + kPlotH + 16, g.label.substr(0, 40), "middle", 10);
    if (!g.note.empty()) s += Text(x + gw / 2, kTop + kPlotH + 30, g.note, "middle", 10);
    x += gw + gap;
  }
  s += Legend(c.series, c.series_colours, kLeft, h - 14);
  return s + "</svg>\n";
}

std::string RenderLineChart(const LineChart& c) {
  double xmax = 1, ymax = 0;
  for (const auto& ser : c.series)
    for (size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      xmax = std::max(xmax, ser.x[i]);
      if (std::isfinite(ser.y[i])) ymax = std::max(ymax, ser.y[i]);
    }
  ymax = NiceCeil(ymax * 1.1);
  const double plot_w = 460, w = kLeft + plot_w + kRight, h = kTop + kPlotH + kBottom;
  auto px = [&](double v) { return kLeft + plot_w * (xmax > 1 ? (v - 1) / (xmax - 1) : 0.5); };
  auto py = [&](double v) { return kTop + kPlotH - kPlotH * std::clamp(v / ymax, 0.0, 1.0); };
  std::string s = Header(w, h, c.title) + YAxis(ymax, plot_w, c.y_label);
  for (int t = 1; t <= static_cast<int>(xmax); ++t) s += Text(px(t), kTop + kPlotH + 16, std::to_string(t), "middle", 10);
  s += Text(kLeft + plot_w / 2, kTop + kPlotH + 34, c.x_label, "middle", 11);
  std::vector<std::string> names;
  for (size_t k = 0; k < c.series.size(); ++k) {
    const auto& ser = c.series[k];
    names.push_back(ser.name);
    std::string path;
    for (size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      if (!std::isfinite(ser.y[i])) {
        if (!path.empty()) s += "<polyline fill=\"none\" stroke=\"" + std::string(Colour(k)) + "\" stroke-width=\"2\" points=\"" + path + "\"/>\n";
        path.clear();
        continue;
      }
      path += F(px(ser.x[i])) + "," + F(py(ser.y[i])) + " ";
      s += "<circle cx=\"" + F(px(ser.x[i])) + "\" cy=\"" + F(py(ser.y[i])) + "\" r=\"3\" fill=\"" + Colour(k) + "\"/>\n";
    }
    if (!path.empty())
      s += "<polyline fill=\"none\" stroke=\"" + std::string(Colour(k)) + "\" stroke-width=\"2\" points=\"" + path + "\"/>\n";
  }
  s += Legend(names, {}, kLeft, h - 14);
  return s + "</svg>\n";
}

}  // namespace ember::bench
