// A small SVG writer and the benchmark charts built on it (written by hand; no external tools). SvgBuilder
// collects elements and Finish() returns a standalone SVG document; all text is XML-escaped. LineChart draws
// series of (x, y) points with axes, nice ticks and a legend (latency CDFs, throughput over time). Value
// types; not thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lockstep::client {

std::string XmlEscape(const std::string& text);

class SvgBuilder {
 public:
  SvgBuilder(double width, double height);
  void Rect(double x, double y, double w, double h, const std::string& fill, const std::string& title = "");
  void Line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& dash = "");
  void Polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                double width = 2);
  // anchor: "start", "middle" or "end".
  void Text(double x, double y, const std::string& text, double size = 12,
            const std::string& anchor = "start", bool bold = false, const std::string& fill = "#222");
  std::string Finish() const;

 private:
  double width_, height_;
  std::string body_;
};

// About 6 round tick values from at or below lo to at or above hi.
std::vector<double> NiceTicks(double lo, double hi);
// A short label for a tick value ("0.25", "12", "1.5k").
std::string TickLabel(double value);
// The palette used by every chart (cycled).
const std::string& SeriesColor(size_t index);

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};

// A plot area with axes and ticks placed into `svg` at (x, y) of size w x h.
struct PlotArea {
  double x, y, w, h;
  double x_lo, x_hi, y_lo, y_hi;
  double X(double v) const { return x + (v - x_lo) / (x_hi - x_lo) * w; }
  double Y(double v) const { return y + h - (v - y_lo) / (y_hi - y_lo) * h; }
};
// Draws axes, grid lines, tick labels (x ticks only when x_ticks: not for categories) and axis titles;
// returns the mapping.
PlotArea DrawAxes(SvgBuilder* svg, double x, double y, double w, double h, double x_lo, double x_hi,
                  double y_lo, double y_hi, const std::string& x_label, const std::string& y_label,
                  bool x_ticks = true);

// A standalone line chart document.
std::string LineChart(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<ChartSeries>& series, bool steps = false);

}  // namespace lockstep::client
