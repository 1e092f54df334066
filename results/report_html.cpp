#include "results/report_html.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "results/svg.hpp"
#include "tuner/fingerprint.hpp"

namespace acceltune {

namespace {

using svg::escape;

const char* kStyle = R"~(
body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;background:#fff;line-height:1.4}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:3px;margin-top:28px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #d4d4d4;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv th{width:170px}
.warn{background:#fff4d6;border:1px solid #e0b94a;padding:6px 10px;margin:6px 0;font-size:13px}
.note{color:#555;font-size:13px}
figure{margin:8px 0}figcaption{font-size:12px;color:#444;max-width:900px}
code{font-size:12px;background:#f6f6f6;padding:0 3px}
.sig{color:#1a7f37;font-weight:bold}.insig{color:#777}.slow{color:#b42318;font-weight:bold}
details{font-size:13px;margin:6px 0}
td.headline{min-width:160px}.sig,.insig,.slow{white-space:nowrap}
)~";

std::string h(const std::string& s) { return escape(s); }

std::string fnum(const std::optional<double>& v) { return v ? format_number(*v) : "-"; }

std::string ratio_text(const std::optional<double>& v) { return v ? fmt::format("{:.2f}x", *v) : "-"; }

std::map<std::string, std::string> units_of(const Space& space) {
  std::map<std::string, std::string> u;
  for (const auto& p : space.params()) u[p.name] = p.unit;
  return u;
}

// The params where a config differs from the default, or "(default)".
std::string describe(const Json& config, const Json& default_config, const std::map<std::string, std::string>& units) {
  std::string out;
  if (!config.is_object()) return "-";
  for (const auto& [k, v] : config.items()) {
    if (default_config.contains(k) && default_config[k] == v) continue;
    auto u = units.find(k);
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, show_param_value(v, u == units.end() ? "" : u->second));
  }
  return out.empty() ? "(default)" : out;
}

std::string page_start(const std::string& title) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>{}</style>\n</head>\n<body>\n",
                     h(title), kStyle);
}

std::string page_end() {
  return fmt::format("<footer class=\"note\"><p>Written by acceltune {}. The page is self-contained: inline CSS and "
                     "SVG, nothing loaded from elsewhere.</p></footer>\n</body>\n</html>\n",
                     h(acceltune_version()));
}

std::string kv_row(const std::string& k, const std::string& v_html) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", h(k), v_html);
}

std::string json_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Host, CPU, memory, OS and the id in one line, for headers.
std::string fingerprint_summary(const Json& fp) {
  if (!fp.is_object()) return "(none)";
  std::vector<std::string> parts;
  auto str = [&](const Json& j, const char* k) { return j.contains(k) && !j[k].is_null() ? json_text(j[k]) : ""; };
  if (!str(fp, "id").empty()) parts.push_back("id " + str(fp, "id"));
  if (!str(fp, "host").empty()) parts.push_back("host " + str(fp, "host"));
  const Json cpu = fp.value("cpu", Json::object());
  if (cpu.is_object()) {
    std::string c = str(cpu, "model");
    if (cpu.contains("logical_cores")) {
      c += fmt::format(", {} cores", json_text(cpu["logical_cores"]));
      if (cpu.contains("usable_cores") && cpu["usable_cores"] != cpu["logical_cores"]) {
        c += fmt::format(" ({} usable)", json_text(cpu["usable_cores"]));
      }
    }
    if (!c.empty()) parts.push_back(c);
  }
  if (fp.contains("memory_bytes") && fp["memory_bytes"].is_number()) {
    parts.push_back(fmt::format("{:.1f} GiB memory", fp["memory_bytes"].get<double>() / (1024.0 * 1024 * 1024)));
  }
  const Json os = fp.value("os", Json::object());
  if (os.is_object()) {
    std::string o = str(os, "name");
    if (!str(os, "kernel").empty()) o += (o.empty() ? "" : ", ") + str(os, "kernel");
    if (!o.empty()) parts.push_back(o);
  }
  // Sections that other probes add (NUMA nodes, NICs, GPUs, RDMA devices): their sizes.
  for (const auto& [k, v] : fp.items()) {
    if (v.is_array() && k != "flags" && !v.empty() && v.front().is_object()) {
      parts.push_back(fmt::format("{} {}", v.size(), k));
    } else if (v.is_array() && v.empty() && (k == "gpus" || k == "nics" || k == "rdma")) {
      parts.push_back(fmt::format("no {}", k));
    }
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string fingerprint_details(const Json& fp) {
  std::string o = "<details><summary>the whole fingerprint</summary><table>\n";
  for (const auto& [path, v] : flatten_fields(fp.is_object() ? fp : Json::object())) {
    o += fmt::format("<tr><th><code>{}</code></th><td>{}</td></tr>\n", h(path), h(json_text(v)));
  }
  return o + "</table></details>\n";
}

bool wide_range(const std::vector<double>& v) {
  double lo = INFINITY, hi = 0;
  for (double x : v) {
    if (std::isfinite(x) && x > 0) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  return hi > 0 && lo < INFINITY && hi / lo > 20;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool any_size_zero(const std::vector<uint64_t>& sizes) {
  return std::find(sizes.begin(), sizes.end(), uint64_t{0}) != sizes.end();
}

// The x axis of a value-versus-size plot: log2 bytes, or one category for size-less kernels.
svg::Axis size_axis(const std::vector<uint64_t>& sizes) {
  svg::Axis x;
  x.label = "message size (bytes, log2 scale)";
  x.scale = svg::Scale::log2_bytes;
  if (any_size_zero(sizes)) {
    x.label = "message size (none: the kernel is size-less)";
    x.scale = svg::Scale::category;
    x.categories = {"-"};
  }
  return x;
}

double size_x(const svg::Axis& x, uint64_t bytes) {
  return x.scale == svg::Scale::category ? 0.0 : static_cast<double>(bytes);
}

svg::Point point_with_bar(double x, double y, double p10, double p90) {
  svg::Point p{x, y};
  if (std::isfinite(p10) && std::isfinite(p90)) {
    p.lo = std::min(p10, p90);
    p.hi = std::max(p10, p90);
  }
  return p;
}

// A gain and its 95% interval, "2.47x [2.20, 2.77]".
std::string interval_text(double ratio, const std::optional<double>& low, const std::optional<double>& high) {
  return fmt::format("{:.2f}x [{}, {}]", ratio, low && std::isfinite(*low) ? fmt::format("{:.2f}", *low) : "-",
                     high && std::isfinite(*high) ? fmt::format("{:.2f}", *high) : "-");
}

// The medians behind a size's certified interval (config, default): the winner's fresh rounds, or
// in older tables its candidate rounds.
std::optional<std::pair<double, double>> certified_medians(const SizeBest& e) {
  if (!e.certified || !e.certified_ratio || !e.certified_trial) return std::nullopt;
  if (e.certified_rounds > 0) return std::make_pair(e.certified_value, e.certified_default_value);
  for (const auto& c : e.candidates) {
    if (c.trial == *e.certified_trial) return std::make_pair(c.value, c.default_value);
  }
  return std::nullopt;
}

// Why a table has no delivered gains, in words.
std::string not_verified_why(const BestTable& b) {
  return b.delivery.why.empty() ? "not measured yet: acceltune verify measures it" : b.delivery.why;
}

// The headline of a size: the certified gain with its interval, or "not certified".
std::string certified_cell(const SizeBest& e) {
  if (!e.certified || !e.certified_ratio) return "not certified";
  return fmt::format("<span class=\"{}\">certified {}</span>{}", e.significant ? "sig" : "insig",
                     interval_text(*e.certified_ratio, e.ci_low, e.ci_high),
                     e.significant ? "" : " not significant: the default is exported");
}

// The delivered gain with its interval, or "not verified (why)".
std::string delivered_cell(const BestTable& b, const SizeBest& e) {
  if (!e.delivered) return fmt::format("not verified ({})", h(not_verified_why(b)));
  const Delivered& d = *e.delivered;
  return fmt::format("<span class=\"{}\">delivered {}</span>{}", d.slower ? "slow" : d.faster ? "sig" : "insig",
                     interval_text(d.ratio, d.ci_low, d.ci_high),
                     d.slower ? " slower than the defaults" : d.faster ? "" : " no significant difference");
}

// ---- report sections ----

std::string header_section(const StudyData& s) {
  const Json& st = s.study;
  int64_t ok = 0, failed = 0, screening = 0;
  std::string first_at, last_at;
  for (const auto& t : s.trials) {
    if (t.state == State::ok) ++ok;
    else ++failed;
    if (t.effort < 1.0) ++screening;
    if (!t.started_at.empty()) {
      if (first_at.empty() || t.started_at < first_at) first_at = t.started_at;
      if (last_at.empty() || t.started_at > last_at) last_at = t.started_at;
    }
  }
  std::string o = fmt::format("<h1>acceltune report: {}</h1>\n<p class=\"note\">study <code>{}</code></p>\n",
                              h(s.space.name()), h(s.dir));
  if (!s.finished) {
    o += fmt::format("<p class=\"warn\">This study has no best.json yet: it is still running or was stopped. The "
                     "figures below are from the {} trials recorded so far.</p>\n",
                     s.trials.size());
  }
  if (s.torn > 0) {
    o += "<p class=\"warn\">The last line of trials.jsonl was torn (a write was interrupted) and is left out.</p>\n";
  }
  o += "<section id=\"summary\">\n<table class=\"kv\">\n";
  o += kv_row("space", h(s.space.name()) + (s.space.description().empty() ? "" : " &mdash; " + h(s.space.description())));
  o += kv_row("kernel, operation", h(s.workload.kernel) + ", " + h(s.workload.operation) +
                                       fmt::format(" (dtype {}, {} rank{})", h(s.workload.dtype), s.workload.ranks,
                                                   s.workload.ranks == 1 ? "" : "s"));
  std::string sizes;
  for (uint64_t b : s.workload.sizes) sizes += (sizes.empty() ? "" : ", ") + format_bytes(b);
  o += kv_row("message sizes", h(sizes));
  o += kv_row("strategy, seed", h(st.value("strategy", "?")) + ", " + h(st.contains("seed") ? json_text(st["seed"]) : "?"));
  o += kv_row("trials", fmt::format("{} ({} ok, {} failed{})", s.trials.size(), ok, failed,
                                    screening ? fmt::format(", {} screening at reduced effort", screening) : ""));
  o += kv_row("dates (UTC)", fmt::format("created {}; trials from {} to {}", h(st.value("created_at", "?")),
                                         h(first_at.empty() ? "-" : first_at), h(last_at.empty() ? "-" : last_at)));
  o += kv_row("certified", s.best.certified ? "yes: top configs re-measured interleaved with the default"
                                            : "no: values are the search's measurements");
  o += kv_row("delivered", s.best.delivery.state == "measured"
                               ? fmt::format("measured through {} ({} rounds, interleaved with the defaults)",
                                             h(s.best.delivery.client.empty() ? "a plain client" : s.best.delivery.client),
                                             s.best.delivery.rounds)
                               : "not verified: " + h(not_verified_why(s.best)));
  o += kv_row("acceltune", h(st.value("acceltune_version", "?")));
  o += kv_row("fingerprint", h(fingerprint_summary(st.value("fingerprint", Json::object()))));
  o += "</table>\n";
  o += fingerprint_details(st.value("fingerprint", Json::object()));
  o += "</section>\n";
  return o;
}

std::string best_section(const StudyData& s) {
  const auto units = units_of(s.space);
  const BestTable& b = s.best;
  std::string o = "<section id=\"best\">\n<h2>Best per message size</h2>\n<table>\n";
  o += fmt::format(
      "<tr><th>size</th><th>default ({0})</th><th>certified gain [95% interval]</th><th>delivered gain [95% "
      "interval]</th><th>exported config</th><th>certified medians: config / default ({0})</th><th>recommended "
      "config (trial)</th><th>recommended: search median ({0})</th><th>model estimate ({0}) [95% interval]</th>"
      "<th>best single measurement ({0}) (trial)</th></tr>\n",
      h(s.unit));
  for (const auto& e : b.sizes) {
    const auto cm = certified_medians(e);
    const std::string medians = cm ? fmt::format("{} / {}", format_number(cm->first), format_number(cm->second)) : "-";
    const std::string rec_cfg =
        e.best_trial ? fmt::format("{} (#{})", h(describe(e.best_config, b.default_config, units)), *e.best_trial)
                     : "no config measured ok";
    const std::string chosen = e.chosen_is_default ? "(default)" : h(describe(e.chosen_config, b.default_config, units));
    std::string model = "-";
    if (e.predicted) {
      model = format_number(*e.predicted);
      if (e.predicted_low && e.predicted_high) {
        model += fmt::format(" [{}, {}]", format_number(*e.predicted_low), format_number(*e.predicted_high));
      }
    }
    const std::string observed =
        e.observed_trial ? fmt::format("{} (#{})", format_number(e.observed_value), *e.observed_trial) : "-";
    o += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"headline\">{}</td>"
                     "<td class=\"headline\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>"
                     "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                     h(format_bytes(e.bytes)), fnum(e.default_value), certified_cell(e), delivered_cell(b, e), chosen,
                     medians, rec_cfg, e.best_trial ? format_number(e.best_value) : "-", model, observed);
  }
  o += "</table>\n";
  o += "<p class=\"note\">Each figure is named as what it is. <strong>Certified</strong>: the top configs re-measured inside "
       "the kernel interleaved with the default (A B A B ...), the gain with its 95% interval; significant (green) "
       "when the interval excludes 1.0, else the default is exported. <strong>Delivered</strong>: the export loaded the way a "
       "job loads it, by a plain client of the family, interleaved with the library's defaults; \"not verified\" "
       "when it was not measured. <strong>Recommended</strong>: the config the search ranks first, with its median from the "
       "search. <strong>Model estimate</strong>: the search model's estimate of the recommended config. <strong>Best single "
       "measurement</strong>: the highest median any one trial measured; with noise often a lucky one, never the "
       "headline.</p>\n";
  if (!b.certified) {
    o += "<p class=\"note\">This study was not certified: no gain here is more than the search's own "
         "measurements.</p>\n";
  }
  if (!b.ranges.empty()) {
    o += "<p class=\"note\">Export ranges:";
    for (const auto& r : b.ranges) {
      o += fmt::format(" [{}, {}) {};", h(r.min_bytes == 0 ? "0" : format_bytes(r.min_bytes)),
                       h(r.max_bytes == UINT64_MAX ? "max" : format_bytes(r.max_bytes + 1)),
                       r.is_default ? "default" : h(describe(r.config, b.default_config, units)));
    }
    o += "</p>\n";
  }
  // The plan: its job-wide part, its fallbacks, and whether a job that loads it was measured.
  const std::string job = b.plan.job_is_default ? "(default)" : describe(b.plan.job, b.default_config, units);
  o += fmt::format("<p class=\"note\">Job-wide (one value for the whole job): {}.</p>\n",
                   job == "(default)" ? "the library defaults" : h(job));
  if (!b.plan.notes.empty()) {
    o += "<ul class=\"note\">\n";
    for (const auto& n : b.plan.notes) o += fmt::format("<li>{}</li>\n", h(n));
    o += "</ul>\n";
  }
  if (b.delivery.state == "measured") {
    o += fmt::format("<p class=\"note\">Delivered: measured through {} ({} rounds, interleaved with the defaults{}).</p>\n",
                     h(b.delivery.client.empty() ? "a plain client" : b.delivery.client), b.delivery.rounds,
                     b.delivery.at.empty() ? "" : ", " + h(b.delivery.at));
  } else {
    o += fmt::format("<p class=\"note\">Delivered: not verified: {}.</p>\n", h(not_verified_why(b)));
  }
  return o + "</section>\n";
}

std::string bandwidth_section(const StudyData& s) {
  svg::Chart c;
  c.title = "value versus message size";
  c.x = size_axis(s.workload.sizes);
  c.y.label = fmt::format("{} ({})", s.unit == "GB/s" ? "bandwidth" : "objective", s.unit);
  svg::Series def{"library default", {}, svg::palette(0)};
  def.dashed = true;
  def.marker = svg::Marker::square;
  svg::Series best{"tuned per size", {}, svg::palette(1)};
  best.marker = svg::Marker::circle;
  svg::Series overall{"single best config (all sizes)", {}, svg::palette(2)};
  overall.marker = svg::Marker::diamond;
  overall.dashed = true;
  const Trial* d = default_trial(s);
  const Trial* o_trial = nullptr;
  if (s.best.overall_trial) {
    for (const auto& t : s.trials) {
      if (t.number == *s.best.overall_trial) o_trial = &t;
    }
  }
  std::vector<double> ys;
  size_t certified_points = 0, recommended_points = 0;
  for (uint64_t bytes : s.workload.sizes) {
    const double x = size_x(c.x, bytes);
    if (d) {
      if (const Measurement* m = d->at_size(bytes); m && m->state == State::ok && std::isfinite(m->value)) {
        def.points.push_back(point_with_bar(x, m->value, m->value_p10, m->value_p90));
        ys.push_back(m->value);
      }
    }
    // The tuned line: the certified median where certified (no p10-p90 bar: its spread is the
    // interval in the table; where the gain was not significant the default is exported, so the
    // default's median from those rounds), else the recommended config's search median; never the
    // best single measurement.
    for (const auto& e : s.best.sizes) {
      if (e.bytes != bytes) continue;
      const auto cm = certified_medians(e);
      const double cv = !cm ? NAN : e.significant ? cm->first : cm->second;
      if (std::isfinite(cv) && cv > 0) {
        best.points.push_back({x, cv});
        ys.push_back(cv);
        ++certified_points;
      } else if (e.best_trial && std::isfinite(e.best_value)) {
        best.points.push_back(point_with_bar(x, e.best_value, e.best_p10, e.best_p90));
        ys.push_back(e.best_value);
        ++recommended_points;
      }
    }
    if (o_trial) {
      if (const Measurement* m = o_trial->at_size(bytes); m && m->state == State::ok && std::isfinite(m->value)) {
        overall.points.push_back(point_with_bar(x, m->value, m->value_p10, m->value_p90));
        ys.push_back(m->value);
      }
    }
  }
  if (d) def.name = fmt::format("library default (trial #{})", d->number);
  if (o_trial) overall.name = fmt::format("single best config (trial #{})", o_trial->number);
  best.name = certified_points && recommended_points ? "tuned: certified median (recommended's search median where "
                                                       "not certified)"
              : certified_points                     ? "tuned: certified median per size"
                                                     : "tuned: recommended config's search median per size";
  c.y.scale = wide_range(ys) ? svg::Scale::log10 : svg::Scale::linear;
  c.series = {def, best};
  if (o_trial && !overall.points.empty()) c.series.push_back(overall);
  std::string o = "<section id=\"bandwidth\" class=\"plot\">\n<h2>Bandwidth versus message size</h2>\n<figure>\n";
  o += svg::render(c);
  o += fmt::format(
      "<figcaption>Median {} per message size of the library default (its search trial), of the tuned config at "
      "each size, and of the single config with the best objective over all sizes. The tuned line goes through "
      "the certified median where the size was certified (the default's median in those rounds where the gain was "
      "not significant and the default is exported), else through the recommended config's median from the "
      "search; never through the best single measurement. Error bars span p10 to p90 of the samples of a search "
      "measurement (the search's own spread, not the certified interval; certified points have none, their gains "
      "and 95% intervals are in the table above). Value axis {}.{}</figcaption>\n",
      s.unit == "GB/s" ? "bandwidth (GB/s, 1e9 bytes/s)" : h("objective (" + s.unit + ")"),
      c.y.scale == svg::Scale::log10 ? "logarithmic" : "linear",
      ys.empty() ? " No size has an ok measurement yet." : "");
  return o + "</figure>\n</section>\n";
}

std::string convergence_section(const StudyData& s) {
  svg::Chart c;
  c.title = "search convergence";
  c.x.label = "trial number";
  c.x.from_zero = true;
  c.y.label = fmt::format("objective: geometric mean over sizes ({})", s.unit);
  c.y.from_zero = false;
  svg::Series dots{"each trial", {}, "#9a9a9a"};
  dots.line = false;
  svg::Series curve{"best so far", {}, svg::palette(1)};
  curve.step = true;
  curve.marker = svg::Marker::none;
  std::vector<const Trial*> order;
  for (const auto& t : s.trials) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const Trial* a, const Trial* b) { return a->number < b->number; });
  std::optional<double> best;
  std::vector<double> ys;
  int64_t last = 0;
  for (const Trial* t : order) {
    last = std::max(last, t->number);
    if (t->state != State::ok || !t->value || !std::isfinite(*t->value)) {
      c.x_marks.push_back(static_cast<double>(t->number));
      continue;
    }
    if (t->effort < 1.0) continue;  // screening values are not comparable with full measurements
    dots.points.push_back({static_cast<double>(t->number), *t->value});
    ys.push_back(*t->value);
    if (!best || *t->value > *best) {
      best = *t->value;
      curve.points.push_back({static_cast<double>(t->number), *best});
    }
  }
  // Carry the best to the last trial so the curve shows the plateau.
  if (best && !curve.points.empty() && curve.points.back().x < static_cast<double>(last)) {
    curve.points.push_back({static_cast<double>(last), *best});
  }
  c.x_marks_label = "failed trial";
  c.y.scale = wide_range(ys) ? svg::Scale::log10 : svg::Scale::linear;
  c.series = {dots, curve};
  std::string o = "<section id=\"convergence\" class=\"plot\">\n<h2>Search convergence</h2>\n<figure>\n";
  o += svg::render(c);
  o += fmt::format("<figcaption>The objective of each finished trial (grey) and the best so far (step line), by trial "
                   "number; trial 0 is the library default. Failed trials are red marks on the axis, never plotted as "
                   "values ({} of {}). Value axis {}.</figcaption>\n",
                   c.x_marks.size(), s.trials.size(), c.y.scale == svg::Scale::log10 ? "logarithmic" : "linear");
  return o + "</figure>\n</section>\n";
}

std::string params_section(const StudyData& s) {
  const auto& params = s.space.params();
  const double panel_w = 980, panel_h = 190;
  std::string body;
  size_t drawn = 0;
  std::vector<double> all;
  for (const auto& t : s.trials) {
    if (t.state == State::ok && t.value && t.effort >= 1.0) all.push_back(*t.value);
  }
  const bool log_y = wide_range(all);
  for (size_t pi = 0; pi < params.size(); ++pi) {
    const Param& p = params[pi];
    svg::Chart c;
    c.width = panel_w;
    c.height = panel_h;
    c.title = p.name + (p.unit.empty() ? "" : " (" + p.unit + ")");
    c.x.label = "";
    c.x.scale = svg::Scale::category;
    c.y.label = s.unit;
    c.y.from_zero = false;
    c.y.scale = log_y ? svg::Scale::log10 : svg::Scale::linear;
    c.legend = drawn == 0;
    svg::Series med{"median of the trials with this value", {}, svg::palette(0)};
    med.line = false;
    svg::Series top{"best trial with this value", {}, svg::palette(1)};
    top.line = false;
    top.marker = svg::Marker::diamond;
    for (size_t vi = 0; vi < p.values.size(); ++vi) {
      std::vector<double> vals;
      for (const auto& t : s.trials) {
        if (t.state != State::ok || !t.value || t.effort < 1.0 || t.config.index.size() <= pi) continue;
        if (t.config.index[pi] == vi) vals.push_back(*t.value);
      }
      std::string label = show_param_value(to_json(p.values[vi]), p.unit);
      if (vi == p.default_index) label += "*";
      label += fmt::format("\n{} trial{}", vals.size(), vals.size() == 1 ? "" : "s");
      c.x.categories.push_back(label);
      if (vals.empty()) continue;
      med.points.push_back({static_cast<double>(vi), median_of(vals)});
      top.points.push_back({static_cast<double>(vi), *std::max_element(vals.begin(), vals.end())});
    }
    c.series = {med, top};
    if (c.legend) c.height += 18;
    body += svg::render_panel(c, 0, drawn == 0 ? 0 : panel_h * static_cast<double>(drawn) + 18);
    ++drawn;
  }
  const double total_h = drawn == 0 ? 40 : panel_h * static_cast<double>(drawn) + 18;
  if (drawn == 0) body = R"~(<text x="10" y="24" font-size="13">the space has no params</text>)~";
  std::string o = "<section id=\"params\" class=\"plot\">\n<h2>Effect of each parameter</h2>\n<figure>\n";
  o += svg::document(panel_w, total_h, body, "effect of each parameter");
  o += "<figcaption>For each param and each of its values: the median (circle) and the best (diamond) objective of "
       "the finished trials that had that value; the number of those trials is below each value, * marks the library "
       "default. Trials differ in the other params too, so this is a marginal view, not a controlled one.";
  o += log_y ? " Value axes logarithmic." : " Value axes linear.";
  return o + "</figcaption>\n</figure>\n</section>\n";
}

std::string failed_section(const StudyData& s) {
  const auto units = units_of(s.space);
  std::string o = "<section id=\"failed\">\n<h2>Failed trials</h2>\n";
  std::string rows;
  size_t n = 0;
  for (const auto& t : s.trials) {
    if (t.state == State::ok) continue;
    ++n;
    rows += fmt::format("<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", t.number,
                        h(std::string(to_string(t.state))), h(t.error),
                        h(describe(s.space.config_to_json(t.config), s.best.default_config, units)),
                        h(t.started_at));
  }
  if (n == 0) return o + "<p class=\"note\">No trial failed.</p>\n</section>\n";
  o += fmt::format("<p class=\"note\">{} trial{} did not measure every size ok; they are listed here and left out of "
                   "the plots.</p>\n<table>\n<tr><th>trial</th><th>state</th><th>error</th><th>config (differences "
                   "from the default)</th><th>started (UTC)</th></tr>\n",
                   n, n == 1 ? "" : "s");
  return o + rows + "</table>\n</section>\n";
}

std::string top_trials_section(const StudyData& s) {
  const auto units = units_of(s.space);
  std::vector<const Trial*> ok;
  for (const auto& t : s.trials) {
    if (t.state == State::ok && t.value && t.effort >= 1.0) ok.push_back(&t);
  }
  std::sort(ok.begin(), ok.end(), [](const Trial* a, const Trial* b) { return *a->value > *b->value; });
  if (ok.size() > 10) ok.resize(10);
  std::string o = "<section id=\"top\">\n<h2>Top trials by objective</h2>\n<table>\n";
  o += fmt::format("<tr><th>trial</th><th>objective ({})</th><th>config (differences from the default)</th>"
                   "<th>cost (s)</th></tr>\n",
                   h(s.unit));
  for (const Trial* t : ok) {
    o += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{:.2f}</td></tr>\n",
                     t->number, format_number(*t->value),
                     h(describe(s.space.config_to_json(t->config), s.best.default_config, units)), t->cost_seconds);
  }
  return o + "</table>\n</section>\n";
}

}  // namespace

std::string report_html(const StudyData& s) {
  std::string o = page_start("acceltune report: " + s.space.name());
  o += header_section(s);
  o += best_section(s);
  o += bandwidth_section(s);
  o += convergence_section(s);
  o += params_section(s);
  o += top_trials_section(s);
  o += failed_section(s);
  return o + page_end();
}

std::string compare_html(const Comparison& c, const std::vector<StudyData>& studies) {
  std::string title = "acceltune compare:";
  for (const auto& s : c.studies) title += " " + s.space;
  std::string o = page_start(title);
  o += "<h1>acceltune compare</h1>\n<section id=\"studies\">\n<h2>Studies</h2>\n<table>\n";
  o += "<tr><th>study</th><th>directory</th><th>space</th><th>kernel</th><th>fingerprint</th><th>trials</th>"
       "<th>certified</th><th>created (UTC)</th></tr>\n";
  for (size_t k = 0; k < c.studies.size(); ++k) {
    const auto& s = c.studies[k];
    const Json fp = k < studies.size() ? studies[k].study.value("fingerprint", Json::object()) : Json::object();
    o += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}, {}</td><td>{}</td><td class=\"num\">{} "
                     "({} ok){}</td><td>{}</td><td>{}</td></tr>\n",
                     h(s.label), h(s.dir), h(s.space), h(s.kernel), h(s.operation), h(fingerprint_summary(fp)), s.trials,
                     s.trials_ok, s.finished ? "" : ", running or stopped", s.certified ? "yes" : "no",
                     h(s.created_at));
  }
  o += "</table>\n</section>\n";
  if (!c.warnings.empty()) {
    o += "<section id=\"warnings\">\n<h2>Comparability</h2>\n";
    for (const auto& w : c.warnings) o += fmt::format("<p class=\"warn\">warning: {}</p>\n", h(w));
    o += "</section>\n";
  }

  // Values per size, one column group per study.
  o += "<section id=\"values\">\n<h2>Per message size</h2>\n<table>\n<tr><th rowspan=\"2\">size</th>";
  for (size_t k = 0; k < c.studies.size(); ++k) {
    o += fmt::format("<th colspan=\"{}\">{}</th>", k == 0 ? 5 : 7, h(c.studies[k].label));
  }
  o += "</tr>\n<tr>";
  for (size_t k = 0; k < c.studies.size(); ++k) {
    o += fmt::format("<th>default ({0})</th><th>search: recommended ({0})</th><th>search gain</th><th>certified gain "
                     "[95% interval]</th><th>delivered gain [95% interval]</th>",
                     h(c.unit));
    if (k > 0) o += fmt::format("<th>search vs {0}</th><th>default vs {0}</th>", h(c.studies[0].label));
  }
  o += "</tr>\n";
  for (size_t i = 0; i < c.sizes.size(); ++i) {
    o += fmt::format("<tr><td>{}</td>", h(format_bytes(c.sizes[i])));
    for (size_t k = 0; k < c.cells[i].size(); ++k) {
      const CompareCell& e = c.cells[i][k];
      std::string cert = "not certified";
      if (e.certified && e.certified_ratio) {
        cert = fmt::format("<span class=\"{}\">certified {}</span>", e.significant ? "sig" : "insig",
                           interval_text(*e.certified_ratio, e.ci_low, e.ci_high));
      }
      std::string del = "not verified";
      if (e.delivered) {
        const Delivered& d = *e.delivered;
        del = fmt::format("<span class=\"{}\">delivered {}</span>{}", d.slower ? "slow" : d.faster ? "sig" : "insig",
                          interval_text(d.ratio, d.ci_low, d.ci_high), d.slower ? " slower than the defaults" : "");
      }
      o += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td>",
                       fnum(e.default_value), fnum(e.best_value), ratio_text(e.gain), cert, del);
      if (k > 0) {
        o += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td>", ratio_text(e.best_vs_first),
                         ratio_text(e.default_vs_first));
      }
    }
    o += "</tr>\n";
  }
  o += "</table>\n<p class=\"note\">Default and recommended are the search's medians (the default trial and the "
       "config the search recommends at each size); search gain is their ratio, from the search alone; certified is "
       "the interleaved re-measurement's gain with its 95% interval, when the study was certified; delivered is the "
       "export loaded the way a job loads it, interleaved with the defaults, when that was measured.</p>\n";
  for (const auto& s : c.studies) {
    if (s.delivery_state == "measured") continue;
    o += fmt::format("<p class=\"note\">{} delivered: not verified: {}.</p>\n", h(s.label),
                     h(s.delivery_why.empty() ? "not measured yet: acceltune verify measures it" : s.delivery_why));
  }
  if (!c.other_sizes.empty()) {
    o += "<p class=\"note\">Not compared (not measured by every study):";
    for (const auto& [b, labels] : c.other_sizes) {
      std::string l;
      for (const auto& x : labels) l += (l.empty() ? "" : ", ") + x;
      o += fmt::format(" {} (only {});", h(format_bytes(b)), h(l));
    }
    o += "</p>\n";
  }
  o += "</section>\n";

  // The plot.
  svg::Chart chart;
  chart.title = "default and recommended value versus message size";
  chart.x = size_axis(c.sizes);
  chart.y.label = fmt::format("{} ({})", c.unit == "GB/s" ? "bandwidth" : "objective", c.unit);
  std::vector<double> ys;
  for (size_t k = 0; k < c.studies.size(); ++k) {
    svg::Series def{c.studies[k].label + " default", {}, svg::palette(k)};
    def.dashed = true;
    def.marker = svg::Marker::square;
    svg::Series best{c.studies[k].label + " recommended (search median)", {}, svg::palette(k)};
    for (size_t i = 0; i < c.sizes.size(); ++i) {
      const CompareCell& e = c.cells[i][k];
      const double x = size_x(chart.x, c.sizes[i]);
      if (e.default_value) {
        def.points.push_back(point_with_bar(x, *e.default_value, e.default_p10.value_or(NAN), e.default_p90.value_or(NAN)));
        ys.push_back(*e.default_value);
      }
      if (e.best_value) {
        best.points.push_back(point_with_bar(x, *e.best_value, e.best_p10.value_or(NAN), e.best_p90.value_or(NAN)));
        ys.push_back(*e.best_value);
      }
    }
    chart.series.push_back(def);
    chart.series.push_back(best);
  }
  chart.y.scale = wide_range(ys) ? svg::Scale::log10 : svg::Scale::linear;
  o += "<section id=\"plot\" class=\"plot\">\n<h2>Default and recommended versus message size</h2>\n<figure>\n";
  o += svg::render(chart);
  o += fmt::format("<figcaption>Each study in its own colour: the library default dashed (squares), the config the "
                   "search recommends per size solid (circles), both the search's medians (certified and delivered "
                   "gains are in the table above). Error bars span p10 to p90 of the samples of each measurement. "
                   "Value axis {}.</figcaption>\n</figure>\n</section>\n",
                   chart.y.scale == svg::Scale::log10 ? "logarithmic" : "linear");

  // Where the best configs differ.
  std::map<std::string, std::string> units;
  for (const auto& s : studies) {
    for (const auto& p : s.space.params()) units.emplace(p.name, p.unit);
  }
  o += "<section id=\"configs\">\n<h2>Where the best configs differ</h2>\n";
  if (c.config_differences.empty()) {
    o += "<p class=\"note\">The best configs are the same at every compared size.</p>\n";
  } else {
    o += "<table>\n<tr><th>size</th><th>param</th>";
    for (const auto& s : c.studies) o += fmt::format("<th>{}</th>", h(s.label));
    o += "</tr>\n";
    for (const auto& d : c.config_differences) {
      o += fmt::format("<tr><td>{}</td><td>{}</td>", h(format_bytes(d.bytes)), h(d.param));
      const auto u = units.find(d.param);
      for (const auto& v : d.values) {
        o += fmt::format("<td>{}</td>", h(show_param_value(v, u == units.end() ? "" : u->second)));
      }
      o += "</tr>\n";
    }
    o += "</table>\n";
  }
  o += "</section>\n";

  o += fmt::format("<section id=\"fingerprints\">\n<h2>How the fingerprints differ</h2>\n<p class=\"note\">Compared: "
                   "{}.</p>\n",
                   c.fingerprint_subset ? "the fields each probe's id hashes (fingerprint_fields)"
                                        : "the whole fingerprint minus volatile fields (id, clocks, temperatures, "
                                          "power, load, times)");
  auto field_table = [&](const std::vector<FieldDifference>& diffs) {
    std::string t = "<table>\n<tr><th>field</th>";
    for (const auto& s : c.studies) t += fmt::format("<th>{}</th>", h(s.label));
    t += "</tr>\n";
    for (const auto& d : diffs) {
      t += fmt::format("<tr><td><code>{}</code></td>", h(d.field));
      for (const auto& v : d.values) t += fmt::format("<td>{}</td>", h(v.is_null() ? "(absent)" : json_text(v)));
      t += "</tr>\n";
    }
    return t + "</table>\n";
  };
  if (c.fingerprint_differences.empty()) {
    o += "<p class=\"note\">No field differs.</p>\n";
  } else {
    o += field_table(c.fingerprint_differences);
  }
  if (!c.other_fingerprint_differences.empty()) {
    o += "<p class=\"note\">Other fields that differ (not hashed into the ids):</p>\n";
    o += field_table(c.other_fingerprint_differences);
  }
  o += "</section>\n";
  return o + page_end();
}

Status write_page(const std::string& path, const std::string& html) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return input_error("{}: cannot write the page: {}; choose another file", path, std::strerror(errno));
    f << html;
    if (!f.flush()) return runtime_error("{}: write failed: {}", path, std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return input_error("{}: cannot write the page: {}; choose another file", path, std::strerror(err));
  }
  return {};
}

}  // namespace acceltune
