// A small writer of inline SVG charts for the self-contained HTML pages (report, compare): axes
// with labelled units, a log2 message-size axis with 4K/1M/1G ticks, linear or log value axes,
// category axes, legends, error bars. Output is plain text with every string escaped, so a page
// needs no script, font or image from anywhere.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace acceltune::svg {

// Escapes & < > " ' for text and attribute values of HTML and SVG.
std::string escape(std::string_view text);

enum class Scale {
  linear,
  log10,       // value axis spanning orders of magnitude; ticks 1, 2, 5 x 10^k
  log2_bytes,  // message sizes: ticks at powers of two, labelled 4K, 1M, 1G
  category,    // x = 0, 1, 2, ... named by Axis::categories
};

struct Axis {
  std::string label;  // with its unit: "bandwidth (GB/s)"
  Scale scale = Scale::linear;
  // Fixed ends; NaN: from the data (with a margin, and from 0 on a linear value axis).
  double min = NAN, max = NAN;
  bool from_zero = true;  // linear axes only: include 0
  std::vector<std::string> categories;
};

struct Point {
  double x = 0, y = 0;
  double lo = NAN, hi = NAN;  // an error bar from lo to hi, when both are finite
};

enum class Marker { circle, square, diamond, cross, none };

struct Series {
  std::string name;
  std::vector<Point> points;
  std::string color = "#1f77b4";
  bool line = true;    // join the points (in x order as given)
  bool dashed = false;
  Marker marker = Marker::circle;
  bool step = false;   // a step line (best-so-far curves)
};

struct Chart {
  std::string title;  // drawn above the plot; may be empty
  Axis x, y;
  std::vector<Series> series;
  double width = 760, height = 380;
  bool legend = true;
  // Short vertical marks on the x axis (failed trials on a convergence plot), with their label in
  // the legend.
  std::vector<double> x_marks;
  std::string x_marks_label;
  std::string x_marks_color = "#d62728";
};

// A chart as an SVG group of its own size, placed at (x0, y0) in a larger drawing (small
// multiples in one <svg>).
std::string render_panel(const Chart& chart, double x0, double y0);

// A whole <svg> element around a body; `title` becomes its accessible name.
std::string document(double width, double height, const std::string& body, const std::string& title);

// One chart as a whole <svg> element.
std::string render(const Chart& chart);

// The tick positions an axis gets for a data range [lo, hi] (after the axis's own fixed ends).
std::vector<double> ticks(Scale scale, double lo, double hi);
// A tick's label: "4K" on a bytes axis, "0.5", "20", "1e+03" style numbers otherwise.
std::string tick_label(Scale scale, double v);

// A colour from a fixed, distinguishable palette.
std::string palette(size_t i);

}  // namespace acceltune::svg
