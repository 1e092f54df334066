// The report page of one study (`acceltune report`): its header, the best table, the plots of
// value versus message size, convergence and each param's effect, the top and the failed trials.
// The pieces it shares with the compare page are in html_page.hpp.
#include "results/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "results/html_page.hpp"
#include "results/svg.hpp"
#include "probe/links.hpp"

namespace acceltune {

using namespace html_page;

namespace {

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

std::string kv_row(const std::string& k, const std::string& v_html) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", h(k), v_html);
}

std::string fingerprint_details(const Json& fp) {
  std::string o = "<details><summary>the whole fingerprint</summary><table>\n";
  for (const auto& [path, v] : flatten_fields(fp.is_object() ? fp : Json::object())) {
    o += fmt::format("<tr><th><code>{}</code></th><td>{}</td></tr>\n", h(path), h(json_text(v)));
  }
  return o + "</table></details>\n";
}


// Why a table has no delivered gains, in words.
std::string not_verified_why(const BestTable& b) {
  return b.delivery.why.empty() ? "not measured yet: acceltune verify measures it" : b.delivery.why;
}

// Why a certified size exports the default: "not significant", or what an interval wholly below
// 1.0 says (slower, within the no-harm margin).
std::string not_significant_text(const SizeBest& e) {
  const std::string m = interval_meaning(e.ci_low.value_or(0), e.ci_high.value_or(INFINITY));
  return m == "no significant difference" || m == "faster" ? "not significant" : m;
}

// What a delivered interval says after its figure: nothing when faster.
std::string delivered_meaning(const Delivered& d) {
  const std::string m = interval_meaning(d.ci_low, d.ci_high);
  return m == "faster" ? "" : " " + m + (m == "slower" ? " than the defaults" : "");
}

// The headline of a size: the certified gain with its interval, or "not certified".
std::string certified_cell(const SizeBest& e) {
  if (!e.certified || !e.certified_ratio) return "not certified";
  return fmt::format("<span class=\"{}\">certified {}</span>{}", e.significant ? "sig" : "insig",
                     interval_text(*e.certified_ratio, e.ci_low, e.ci_high),
                     e.significant ? "" : fmt::format(" {}: the default is exported", not_significant_text(e)));
}

// The delivered gain with its interval, or "not verified (why)".
std::string delivered_cell(const BestTable& b, const SizeBest& e) {
  if (!e.delivered) return fmt::format("not verified ({})", h(not_verified_why(b)));
  const Delivered& d = *e.delivered;
  return fmt::format("<span class=\"{}\">delivered {}</span>{}", d.slower ? "slow" : d.faster ? "sig" : "insig",
                     interval_text(d.ratio, d.ci_low, d.ci_high),
                     delivered_meaning(d));
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
      "interval]</th><th>exported config</th><th>exported config / default ({0}), as measured</th><th>recommended "
      "config (trial)</th><th>recommended: search median ({0})</th><th>model estimate ({0}) [95% interval]</th>"
      "<th>best single measurement ({0}) (trial)</th></tr>\n",
      h(s.unit));
  for (const auto& e : b.sizes) {
    // The exported config's one figure, the same as `best` and the JSON export show.
    const ExportedFigure f = exported_figure(b, e);
    const std::string medians =
        fmt::format("{} / {} <span class=\"note\">({})</span>", f.value ? format_number(*f.value) : "-",
                    f.default_value ? format_number(*f.default_value) : "-", h(f.what));
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
                     h(format_bytes(e.bytes)), fnum(f.default_value), certified_cell(e), delivered_cell(b, e), chosen,
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

std::string efficiency_section(const StudyData& s, bool with_links) {
  const Efficiency e = efficiency_of(s.study, s.best);
  std::string o = "<section id=\"efficiency\">\n<h2>Against the link's ceiling</h2>\n<table class=\"kv\">\n";
  o += kv_row("link", h(e.link_label.empty() ? "-" : e.link_label));
  if (e.measured_gbps) {
    o += kv_row("measured", fmt::format("{} GB/s at {} ({}, inside acceltune)", format_number(*e.measured_gbps),
                                        h(format_bytes(e.bytes)), h(e.measured_is)));
  }
  if (e.ceiling_gbps) {
    o += kv_row("ceiling", fmt::format("{} GB/s per direction: {}", format_number(*e.ceiling_gbps), h(e.ceiling_basis)));
  }
  o += kv_row("efficiency", verdict_html(e.to_json()) +
                                (e.efficiency ? " (" + h(verdict_thresholds_text()) + ")" : std::string()));
  if (!e.note.empty()) o += kv_row("note", h(e.note));
  o += "</table>\n";
  if (!e.suggestions.empty()) {
    o += "<p class=\"warn\">What the probe suggests checking:</p>\n<ul>\n";
    for (const auto& x : e.suggestions) o += "<li>" + h(x) + "</li>\n";
    o += "</ul>\n";
  }
  // Every link of the machine the study ran on (a page of several studies lists them once).
  if (with_links) {
    o += "<details><summary>Every link of this study's machine and its ceiling</summary>\n" +
         links_table_html(s.study.value("fingerprint", Json::object())) + "</details>\n";
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
    // The tuned line: the exported config's one figure (exported_figure): the certified median
    // where certified (no p10-p90 bar: its spread is the interval in the table; where the default
    // is exported, the default's median from those rounds), else its search median.
    for (const auto& e : s.best.sizes) {
      if (e.bytes != bytes) continue;
      const ExportedFigure f = exported_figure(s.best, e);
      if (!f.value || !std::isfinite(*f.value) || *f.value <= 0) continue;
      if (f.what.find("certified") != std::string::npos) {
        best.points.push_back({x, *f.value});
        ++certified_points;
      } else if (f.trial && e.best_trial && *f.trial == *e.best_trial) {
        best.points.push_back(point_with_bar(x, e.best_value, e.best_p10, e.best_p90));
        ++recommended_points;
      } else {
        best.points.push_back({x, *f.value});
        ++recommended_points;
      }
      ys.push_back(*f.value);
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

std::string links_table_html(const Json& probe) {
  std::string o = "<table>\n<tr><th>link</th><th>ceiling per direction (GB/s)</th><th>basis</th><th>state</th>"
                  "<th>finding</th></tr>\n";
  for (const auto& c : link_ceilings(probe)) {
    o += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", h(c.label),
                     c.gbps ? format_number(*c.gbps) : "none", h(c.basis), h(c.state.empty() ? "-" : c.state),
                     c.finding.empty() ? "-" : "<span class=\"slow\">" + h(c.finding) + "</span>");
  }
  return o + "</table>\n";
}

std::string study_sections_html(const StudyData& s, const std::string& id_prefix) {
  std::string o = best_section(s) + efficiency_section(s, false) + bandwidth_section(s) + failed_section(s);
  // Several studies share a page: each section's id gets the study's prefix.
  const std::string from = " id=\"", to = " id=\"" + id_prefix + "-";
  for (size_t at = o.find(from); at != std::string::npos; at = o.find(from, at + to.size())) o.replace(at, from.size(), to);
  return o;
}

std::string report_html(const StudyData& s) {
  std::string o = page_start("acceltune report: " + s.space.name());
  o += header_section(s);
  o += best_section(s);
  o += efficiency_section(s, true);
  o += bandwidth_section(s);
  o += convergence_section(s);
  o += params_section(s);
  o += top_trials_section(s);
  o += failed_section(s);
  return o + page_end();
}

}  // namespace acceltune
