// The compare page (`acceltune compare --html`): several studies of one space side by side, their
// values and gains per message size, one plot of every study's default and recommended value,
// where the best configs differ and how the fingerprints differ. The pieces it shares with the
// report page are in html_page.hpp.
#include "results/report_html.hpp"

#include <cmath>
#include <map>

#include "results/html_page.hpp"
#include "results/svg.hpp"
#include "probe/links.hpp"

namespace acceltune {

using namespace html_page;

namespace {

// The studies, one row each, and the warnings that say how comparable they are.
std::string studies_section(const Comparison& c, const std::vector<StudyData>& studies) {
  std::string o;
  o += "<section id=\"studies\">\n<h2>Studies</h2>\n<table>\n";
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
  return o;
}

// Values per size, one column group per study.
std::string values_table(const Comparison& c) {
  std::string o = "<table>\n<tr><th rowspan=\"2\">size</th>";
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
  return o;
}

// Each study against its own link ceiling, what was not delivered and what was not compared.
std::string ceilings_and_gaps(const Comparison& c) {
  std::string o;
  o += fmt::format("<h3>Against each study's own link ceiling</h3>\n<p class=\"note\">Each study's best certified figure "
                   "over the ceiling of the link it crossed on its own machine ({}), so two hardware generations are "
                   "judged by their own links, not only against each other.</p>\n<table>\n<tr><th>study</th>"
                   "<th>link</th><th>measured (GB/s)</th><th>ceiling (GB/s)</th><th>efficiency</th></tr>\n",
                   h(verdict_thresholds_text()));
  for (const auto& s : c.studies) {
    const Json& e = s.efficiency;
    auto gbps = [&](const char* key) {
      return e.contains(key) && e[key].is_number() ? format_number(e[key].get<double>()) : std::string("-");
    };
    o += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                     h(s.label), h(e.value("link_label", "-")), gbps("measured_gbps"), gbps("ceiling_gbps"),
                     verdict_html(e));
  }
  o += "</table>\n";
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
  return o;
}

std::string values_section(const Comparison& c) {
  return "<section id=\"values\">\n<h2>Per message size</h2>\n" + values_table(c) + ceilings_and_gaps(c) +
         "</section>\n";
}

// One plot of every study's default and recommended value.
std::string plot_section(const Comparison& c) {
  std::string o;
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
  return o;
}

// Where the best configs differ, each value in its param's unit.
std::string configs_section(const Comparison& c, const std::vector<StudyData>& studies) {
  std::string o;
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
  return o;
}

// How the fingerprints differ: the hashed fields, then the others.
std::string fingerprints_section(const Comparison& c) {
  std::string o;
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
  return o;
}

}  // namespace

std::string compare_html(const Comparison& c, const std::vector<StudyData>& studies) {
  std::string title = "acceltune compare:";
  for (const auto& s : c.studies) title += " " + s.space;
  std::string o = page_start(title);
  o += "<h1>acceltune compare</h1>\n";
  o += studies_section(c, studies);
  o += values_section(c);
  o += plot_section(c);
  o += configs_section(c, studies);
  o += fingerprints_section(c);
  return o + page_end();
}

}  // namespace acceltune
