// The definitions behind results/svg.hpp: a small writer of inline SVG charts for the
// self-contained HTML pages (report, compare).
#include "results/svg.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "tuner/value.hpp"

namespace acceltune::svg {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab and newline are not allowed in HTML text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string palette(size_t i) {
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colors[i % (sizeof colors / sizeof colors[0])];
}

namespace {

bool is_log(Scale s) { return s == Scale::log10 || s == Scale::log2_bytes; }

// The axis coordinate of a data value: log axes are linear in the logarithm.
double forward(Scale s, double v) {
  switch (s) {
    case Scale::log10: return std::log10(v);
    case Scale::log2_bytes: return std::log2(v);
    default: return v;
  }
}

bool plottable(Scale s, double v) { return std::isfinite(v) && (!is_log(s) || v > 0); }

std::string num(double v) { return fmt::format("{:.1f}", v); }

struct Range {
  double lo = NAN, hi = NAN;  // in axis coordinates
  void add(double t) {
    if (!std::isfinite(t)) return;
    lo = std::isfinite(lo) ? std::min(lo, t) : t;
    hi = std::isfinite(hi) ? std::max(hi, t) : t;
  }
};

// The axis range in axis coordinates, from the data and the axis's fixed ends.
Range axis_range(const Axis& axis, const std::vector<double>& values) {
  Range r;
  if (axis.scale == Scale::category) {
    const double n = static_cast<double>(std::max<size_t>(axis.categories.size(), 1));
    return Range{-0.5, n - 0.5};
  }
  for (double v : values) {
    if (plottable(axis.scale, v)) r.add(forward(axis.scale, v));
  }
  if (!std::isfinite(r.lo)) {
    r = axis.scale == Scale::linear ? Range{0, 1} : Range{0, 1};
  }
  if (axis.scale == Scale::linear && axis.from_zero) r.add(0);
  double span = r.hi - r.lo;
  if (span <= 0) span = std::abs(r.hi) > 0 ? std::abs(r.hi) * 0.2 : 1;
  if (axis.scale == Scale::log2_bytes) {
    r.lo -= std::max(0.3, span * 0.04);
    r.hi += std::max(0.3, span * 0.04);
  } else if (axis.scale == Scale::log10) {
    r.lo -= std::max(0.05, span * 0.06);
    r.hi += std::max(0.05, span * 0.06);
  } else {
    const bool zero_lo = axis.from_zero && r.lo == 0;
    if (!zero_lo) r.lo -= span * 0.06;
    r.hi += span * 0.06;
  }
  if (plottable(axis.scale, axis.min)) r.lo = forward(axis.scale, axis.min);
  if (plottable(axis.scale, axis.max)) r.hi = forward(axis.scale, axis.max);
  if (!(r.hi > r.lo)) r.hi = r.lo + 1;
  return r;
}

double nice_step(double span, int target) {
  const double raw = span / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

}  // namespace

std::vector<double> ticks(Scale scale, double lo, double hi) {
  std::vector<double> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  switch (scale) {
    case Scale::category: {
      for (double v = std::ceil(lo); v <= hi; v += 1) out.push_back(v);
      break;
    }
    case Scale::log2_bytes: {
      const double a = std::ceil(std::log2(lo)), b = std::floor(std::log2(hi));
      // Steps that divide 10, and exponents that are multiples of the step, so 1K, 1M and 1G
      // are ticks whenever they are in range.
      int step = 1;
      for (int st : {1, 2, 5, 10, 20, 30}) {
        step = st;
        if (std::floor(b / st) - std::ceil(a / st) + 1 <= 8) break;
      }
      double first = std::ceil(a / step) * step;
      if (first > b) first = a;
      for (double e = first; e <= b; e += step) out.push_back(std::ldexp(1.0, static_cast<int>(e)));
      break;
    }
    case Scale::log10: {
      const double a = std::floor(std::log10(lo)), b = std::ceil(std::log10(hi));
      const bool fine = b - a <= 2;
      for (double e = a; e <= b; e += 1) {
        const double base = std::pow(10.0, e);
        for (double m : {1.0, 2.0, 5.0}) {
          if (m != 1.0 && !fine) continue;
          const double v = m * base;
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
        }
      }
      if (out.size() < 2) {
        // A narrow log range: linear ticks inside it read better than one decade mark.
        const double step = nice_step(hi - lo, 4);
        out.clear();
        for (double v = std::ceil(lo / step) * step; v <= hi * (1 + 1e-9); v += step) {
          if (v > 0) out.push_back(v);
        }
      }
      break;
    }
    case Scale::linear: {
      const double step = nice_step(hi - lo, 6);
      for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
        out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
      }
      break;
    }
  }
  return out;
}

std::string tick_label(Scale scale, double v) {
  if (scale == Scale::log2_bytes) {
    if (v >= 1) return format_bytes(static_cast<uint64_t>(std::llround(v)));
    return fmt::format("{:g}", v);
  }
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.2g}", v);
  return fmt::format("{:.4g}", v);
}

namespace {

// A tick's label on an axis: its category's name, or the number; none past the last category.
std::optional<std::string> axis_tick_label(const Axis& axis, double t) {
  if (axis.scale != Scale::category) return tick_label(axis.scale, t);
  const auto i = static_cast<size_t>(std::llround(t));
  if (i >= axis.categories.size()) return std::nullopt;
  return axis.categories[i];
}

std::string marker_svg(Marker m, double x, double y, const std::string& color, const std::string& tip) {
  const std::string title = tip.empty() ? "" : "<title>" + escape(tip) + "</title>";
  auto wrap = [&](const std::string& open, const std::string& tag) {
    return title.empty() ? open + "/>" : open + ">" + title + "</" + tag + ">";
  };
  switch (m) {
    case Marker::circle:
      return wrap(fmt::format(R"~(<circle cx="{}" cy="{}" r="3.5" fill="{}")~", num(x), num(y), color), "circle");
    case Marker::square:
      return wrap(fmt::format(R"~(<rect x="{}" y="{}" width="7" height="7" fill="{}")~", num(x - 3.5), num(y - 3.5),
                              color),
                  "rect");
    case Marker::diamond:
      return wrap(fmt::format(R"~(<path d="M{},{} l4,4 l-4,4 l-4,-4 z" fill="{}")~", num(x), num(y - 4), color), "path");
    case Marker::cross:
      return wrap(fmt::format(R"~(<path d="M{},{} l7,7 m0,-7 l-7,7" stroke="{}" stroke-width="1.6" fill="none")~",
                              num(x - 3.5), num(y - 3.5), color),
                  "path");
    case Marker::none: return "";
  }
  return "";
}

double text_width(const std::string& s) { return 6.6 * static_cast<double>(s.size()); }

// The legend: its items, wrapped into rows that fit the chart's width.
struct Legend {
  struct Item {
    std::string name, color;
    bool dashed = false, line = true;
    Marker marker = Marker::circle;
  };
  std::vector<Item> items;
  std::vector<std::vector<size_t>> rows;
};

double item_width(const Legend::Item& it) { return 34 + text_width(it.name) + 16; }

Legend legend_of(const Chart& c, double avail) {
  Legend l;
  if (c.legend) {
    for (const auto& s : c.series) {
      if (!s.name.empty()) l.items.push_back({s.name, s.color, s.dashed, s.line, s.marker});
    }
    if (!c.x_marks.empty() && !c.x_marks_label.empty()) {
      l.items.push_back({c.x_marks_label, c.x_marks_color, false, true, Marker::none});
    }
  }
  double used = 0;
  for (size_t i = 0; i < l.items.size(); ++i) {
    const double w = item_width(l.items[i]);
    if (l.rows.empty() || used + w > avail) {
      l.rows.emplace_back();
      used = 0;
    }
    l.rows.back().push_back(i);
    used += w;
  }
  return l;
}

double inverse(Scale s, double t) {
  if (s == Scale::log10) return std::pow(10.0, t);
  if (s == Scale::log2_bytes) return std::exp2(t);
  return t;
}

// The plot area inside a panel and the ranges its axes show.
struct Frame {
  const Chart& c;
  double left, top, pw, ph;
  Range rx, ry;
  double px(double v) const { return left + (forward(c.x.scale, v) - rx.lo) / (rx.hi - rx.lo) * pw; }
  double py(double v) const { return top + ph - (forward(c.y.scale, v) - ry.lo) / (ry.hi - ry.lo) * ph; }
};

Frame frame_of(const Chart& c, double left, double top, double pw, double ph) {
  std::vector<double> xs, ys;
  for (const auto& s : c.series) {
    for (const auto& p : s.points) {
      xs.push_back(p.x);
      ys.push_back(p.y);
      if (std::isfinite(p.lo) && std::isfinite(p.hi)) {
        ys.push_back(p.lo);
        ys.push_back(p.hi);
      }
    }
  }
  for (double m : c.x_marks) xs.push_back(m);
  return Frame{c, left, top, pw, ph, axis_range(c.x, xs), axis_range(c.y, ys)};
}

// Grid lines, tick labels, the axes' labels and the marks on the x axis.
std::string axes_svg(const Frame& f) {
  const Chart& c = f.c;
  const double left = f.left, top = f.top, pw = f.pw, ph = f.ph;
  std::string o;
  for (double t : ticks(c.x.scale, inverse(c.x.scale, f.rx.lo), inverse(c.x.scale, f.rx.hi))) {
    const double x = f.px(t);
    const auto named = axis_tick_label(c.x, t);
    if (!named) continue;
    const std::string& label = *named;
    o += fmt::format(R"~(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#e3e3e3"/>)~", num(x), num(top), num(top + ph));
    // A category label may have a second line (a count) after a newline.
    const size_t nl = label.find('\n');
    if (nl == std::string::npos) {
      o += fmt::format(R"~(<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>)~", num(x),
                       num(top + ph + 15), escape(label));
    } else {
      o += fmt::format(
          R"~(<text x="{0}" y="{1}" font-size="11" text-anchor="middle"><tspan x="{0}">{2}</tspan><tspan x="{0}" dy="12" fill="#666666">{3}</tspan></text>)~",
          num(x), num(top + ph + 14), escape(label.substr(0, nl)), escape(label.substr(nl + 1)));
    }
  }
  for (double t : ticks(c.y.scale, inverse(c.y.scale, f.ry.lo), inverse(c.y.scale, f.ry.hi))) {
    const auto named = axis_tick_label(c.y, t);
    if (!named) continue;
    const double y = f.py(t);
    o += fmt::format(R"~(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#e3e3e3"/>)~", num(left), num(y), num(left + pw));
    o += fmt::format(R"~(<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>)~", num(left - 5), num(y + 4),
                     escape(*named));
  }
  if (!c.x.label.empty()) {
    o += fmt::format(R"~(<text class="axis-label" x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>)~",
                     num(left + pw / 2), num(top + ph + 32), escape(c.x.label));
  }
  o += fmt::format(
      R"~(<text class="axis-label" x="14" y="{0}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {0})">{1}</text>)~",
      num(top + ph / 2), escape(c.y.label));
  for (double m : c.x_marks) {
    if (!plottable(c.x.scale, m)) continue;
    o += fmt::format(R"~(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="{3}" stroke-width="2"/>)~", num(f.px(m)),
                     num(top + ph - 8), num(top + ph), c.x_marks_color);
  }
  return o;
}

// One series: error bars, then its line, then markers on top.
std::string series_svg(const Frame& f, const Series& s) {
  const Chart& c = f.c;
  std::string o;
  std::vector<std::pair<double, double>> pts;
  for (const auto& p : s.points) {
    if (!plottable(c.x.scale, p.x) || !plottable(c.y.scale, p.y)) continue;
    const double x = f.px(p.x), y = f.py(p.y);
    pts.emplace_back(x, y);
    if (plottable(c.y.scale, p.lo) && plottable(c.y.scale, p.hi)) {
      const double y1 = f.py(p.lo), y2 = f.py(p.hi);
      o += fmt::format(R"~(<path d="M{0},{1} V{2} M{3},{1} h6 M{3},{2} h6" stroke="{4}" stroke-width="1.2" fill="none"/>)~",
                       num(x), num(y1), num(y2), num(x - 3), s.color);
    }
  }
  if (s.line && pts.size() > 1) {
    std::string d = fmt::format("M{},{}", num(pts[0].first), num(pts[0].second));
    for (size_t i = 1; i < pts.size(); ++i) {
      if (s.step) {
        d += fmt::format(" H{} V{}", num(pts[i].first), num(pts[i].second));
      } else {
        d += fmt::format(" L{},{}", num(pts[i].first), num(pts[i].second));
      }
    }
    o += fmt::format(R"~(<path d="{}" stroke="{}" stroke-width="1.8" fill="none"{}/>)~", d, s.color,
                     s.dashed ? R"~( stroke-dasharray="6 4")~" : "");
  }
  size_t k = 0;
  for (const auto& p : s.points) {
    if (!plottable(c.x.scale, p.x) || !plottable(c.y.scale, p.y)) continue;
    const auto ci = static_cast<size_t>(std::llround(p.x));
    const std::string xl = c.x.scale == Scale::category ? (ci < c.x.categories.size() ? c.x.categories[ci] : "")
                                                        : tick_label(c.x.scale, p.x);
    std::string tip = fmt::format("{}: {} = {:.4g}", s.name, xl, p.y);
    if (std::isfinite(p.lo) && std::isfinite(p.hi)) tip += fmt::format(" [{:.4g}, {:.4g}]", p.lo, p.hi);
    o += marker_svg(s.marker, pts[k].first, pts[k].second, s.color, tip);
    ++k;
  }
  return o;
}

std::string legend_svg(const Legend& l, double left, double y) {
  std::string o;
  for (const auto& row : l.rows) {
    double lx = left;
    for (size_t i : row) {
      const Legend::Item& it = l.items[i];
      if (it.line) {
        o += fmt::format(R"~(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="{3}" stroke-width="{4}"{5}/>)~", num(lx),
                         num(y - 4), num(lx + 26), it.color, it.marker == Marker::none ? 2.5 : 1.8,
                         it.dashed ? R"~( stroke-dasharray="6 4")~" : "");
      }
      o += marker_svg(it.marker, lx + 13, y - 4, it.color, "");
      o += fmt::format(R"~(<text x="{}" y="{}" font-size="11">{}</text>)~", num(lx + 32), num(y), escape(it.name));
      lx += item_width(it);
    }
    y += 18;
  }
  return o;
}

}  // namespace

std::string render_panel(const Chart& c, double x0, double y0) {
  // The legend wraps into rows below the x-axis label; the plot gets what is left.
  const double left = 68, right = 16, top = c.title.empty() ? 12 : 30;
  const Legend legend = legend_of(c, c.width - left - right);
  const double bottom = 46 + 18.0 * static_cast<double>(legend.rows.size());
  const double pw = std::max(40.0, c.width - left - right), ph = std::max(40.0, c.height - top - bottom);
  const Frame f = frame_of(c, left, top, pw, ph);

  std::string o = fmt::format(R"~(<g class="chart" transform="translate({},{})">)~", num(x0), num(y0));
  o += fmt::format(R"~(<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)~", num(c.width), num(c.height));
  if (!c.title.empty()) {
    o += fmt::format(R"~(<text x="{}" y="18" font-size="13" font-weight="bold" text-anchor="middle">{}</text>)~",
                     num(left + pw / 2), escape(c.title));
  }
  o += fmt::format(R"~(<rect x="{}" y="{}" width="{}" height="{}" fill="#fbfbfb" stroke="#999999"/>)~", num(left),
                   num(top), num(pw), num(ph));
  o += axes_svg(f);
  for (const auto& s : c.series) o += series_svg(f, s);
  o += legend_svg(legend, left, top + ph + 50);
  o += "</g>";
  return o;
}

std::string document(double width, double height, const std::string& body, const std::string& title) {
  return fmt::format(
      R"~(<svg role="img" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif"><title>{2}</title>{3}</svg>)~",
      num(width), num(height), escape(title), body);
}

std::string render(const Chart& chart) {
  return document(chart.width, chart.height, render_panel(chart, 0, 0), chart.title);
}

}  // namespace acceltune::svg
