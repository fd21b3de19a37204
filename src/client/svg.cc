#include "client/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lockstep::client {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

}  // namespace

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') break;  // invalid in XML 1.0
        out += c;
    }
  }
  return out;
}

SvgBuilder::SvgBuilder(double width, double height) : width_(width), height_(height) {}

void SvgBuilder::Rect(double x, double y, double w, double h, const std::string& fill,
                      const std::string& title) {
  body_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(0.0, w)) +
           "\" height=\"" + Num(std::max(0.0, h)) + "\" fill=\"" + XmlEscape(fill) + "\"";
  body_ += title.empty() ? "/>\n" : "><title>" + XmlEscape(title) + "</title></rect>\n";
}

void SvgBuilder::Line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                      const std::string& dash) {
  body_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) +
           "\" stroke=\"" + XmlEscape(stroke) + "\" stroke-width=\"" + Num(width) + "\"";
  if (!dash.empty()) body_ += " stroke-dasharray=\"" + XmlEscape(dash) + "\"";
  body_ += "/>\n";
}

void SvgBuilder::Polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                          double width) {
  body_ += "<polyline fill=\"none\" stroke=\"" + XmlEscape(stroke) + "\" stroke-width=\"" + Num(width) +
           "\" points=\"";
  for (const auto& [x, y] : points) body_ += Num(x) + "," + Num(y) + " ";
  body_ += "\"/>\n";
}

void SvgBuilder::Text(double x, double y, const std::string& text, double size, const std::string& anchor,
                      bool bold, const std::string& fill) {
  body_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" font-size=\"" + Num(size) + "\" text-anchor=\"" +
           XmlEscape(anchor) + "\" fill=\"" + XmlEscape(fill) + "\"" + (bold ? " font-weight=\"bold\"" : "") +
           ">" + XmlEscape(text) + "</text>\n";
}

std::string SvgBuilder::Finish() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         Num(width_) + "\" height=\"" + Num(height_) + "\" viewBox=\"0 0 " + Num(width_) + " " +
         Num(height_) +
         "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body_ +
         "</svg>\n";
}

std::vector<double> NiceTicks(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step, last = std::ceil(hi / step - 1e-9) * step;
  for (double v = first; v <= last + step * 1e-9; v += step)
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return ticks;
}

std::string TickLabel(double value) {
  char buf[32];
  const double a = std::fabs(value);
  if (a >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%gM", value / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(buf, sizeof(buf), "%gk", value / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%g", std::round(value * 1000) / 1000);
  }
  return buf;
}

const std::string& SeriesColor(size_t index) {
  static const std::vector<std::string> kColors = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                   "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  return kColors[index % kColors.size()];
}

PlotArea DrawAxes(SvgBuilder* svg, double x, double y, double w, double h, double x_lo, double x_hi,
                  double y_lo, double y_hi, const std::string& x_label, const std::string& y_label,
                  bool x_ticks) {
  const auto xt = x_ticks ? NiceTicks(x_lo, x_hi) : std::vector<double>{};
  const auto yt = NiceTicks(y_lo, y_hi);
  PlotArea area{x,    y,
                w,    h,
                x_lo, std::max(x_hi, xt.empty() ? x_hi : xt.back()),
                y_lo, std::max(y_hi, yt.empty() ? y_hi : yt.back())};
  if (!(area.x_hi > area.x_lo)) area.x_hi = area.x_lo + 1;
  if (!(area.y_hi > area.y_lo)) area.y_hi = area.y_lo + 1;
  for (double v : yt) {
    svg->Line(x, area.Y(v), x + w, area.Y(v), "#e5e5e5");
    svg->Text(x - 6, area.Y(v) + 4, TickLabel(v), 11, "end");
  }
  for (double v : xt) {
    svg->Line(area.X(v), y + h, area.X(v), y + h + 4, "#444");
    svg->Text(area.X(v), y + h + 17, TickLabel(v), 11, "middle");
  }
  svg->Line(x, y + h, x + w, y + h, "#444");
  svg->Line(x, y, x, y + h, "#444");
  svg->Text(x + w / 2, y + h + 34, x_label, 12, "middle");
  svg->Text(x, y - 8, y_label, 12, "start");
  return area;
}

std::string LineChart(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<ChartSeries>& series, bool steps) {
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  bool first = true;
  for (const auto& s : series) {
    for (const auto& [px, py] : s.points) {
      if (first) x_lo = x_hi = px, y_hi = py, first = false;
      x_lo = std::min(x_lo, px), x_hi = std::max(x_hi, px), y_hi = std::max(y_hi, py);
      y_lo = std::min(y_lo, py);
    }
  }
  x_lo = std::min(x_lo, 0.0);
  SvgBuilder svg(760, 420);
  svg.Text(380, 24, title, 16, "middle", true);
  const PlotArea area = DrawAxes(&svg, 70, 60, 520, 300, x_lo, x_hi, y_lo, y_hi, x_label, y_label);
  for (size_t i = 0; i < series.size(); ++i) {
    std::vector<std::pair<double, double>> pts;
    for (size_t k = 0; k < series[i].points.size(); ++k) {
      const auto& [px, py] = series[i].points[k];
      if (steps && k > 0) pts.emplace_back(area.X(px), pts.back().second);
      pts.emplace_back(area.X(px), area.Y(py));
    }
    svg.Polyline(pts, SeriesColor(i));
    svg.Rect(610, 70 + 20.0 * i, 14, 10, SeriesColor(i));
    svg.Text(630, 80 + 20.0 * i, series[i].name, 12);
  }
  return svg.Finish();
}

}  // namespace lockstep::client
