// The bring-up page (`acceltune bringup`'s report.html): the node, every family with its studies'
// certified and delivered gains, what was skipped and why, how a job loads the bundle, the merged
// environment with its notes, then each study's own sections from the report page.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "results/html_page.hpp"
#include "results/report_html.hpp"
#include "probe/links.hpp"
#include "results/svg.hpp"
#include "tuner/family.hpp"

namespace acceltune {

using namespace html_page;

namespace {

std::string text_of(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string bundle_cell(const Json& study) {
  if (!study.contains("bundle") || !study["bundle"].is_object()) return "-";
  const Json& b = study["bundle"];
  if (text_of(b, "state") != "measured") return "not verified: " + h(text_of(b, "why"));
  std::string o = h(text_of(b, "text"));
  if (b.contains("sizes") && b["sizes"].is_array() && !b["sizes"].empty()) {
    o += "<br><span class=\"note\">";
    bool first = true;
    for (const auto& z : b["sizes"]) {
      o += fmt::format("{}{} {:.2f}x{}", first ? "" : ", ", h(text_of(z, "size")), z.value("ratio", 0.0),
                       z.value("slower", false) ? " (slower)" : "");
      first = false;
    }
    o += "</span>";
  }
  return o;
}

// A study's efficiency against its link's ceiling (probe/links.hpp's to_json).
std::string efficiency_cell(const Json& study) {
  if (!study.contains("efficiency") || !study["efficiency"].is_object()) return "-";
  const Json& e = study["efficiency"];
  std::string o = verdict_html(e);
  if (e["efficiency"].is_number()) {
    o += fmt::format("<br><span class=\"note\">{} GB/s of {} GB/s, {}</span>", format_number(e.value("measured_gbps", 0.0)),
                     format_number(e.value("ceiling_gbps", 0.0)), h(text_of(e, "link_label")));
  }
  for (const auto& x : e.value("suggestions", Json::array())) {
    if (x.is_string()) o += "<br><span class=\"note\">check: " + h(x.get<std::string>()) + "</span>";
  }
  return o;
}

// A ratio drawn on the chart's axis, which shows 0.25x to 8x (a wider interval runs to its edge).
double clip_ratio(double r) { return std::clamp(r, 0.25, 8.0); }

svg::Point ratio_point(double x, double ratio, double lo, double hi) {
  svg::Point p{x, clip_ratio(ratio)};
  if (std::isfinite(lo) && std::isfinite(hi) && hi > 0) {
    p.lo = clip_ratio(std::max(lo, 1e-9));
    p.hi = clip_ratio(hi);
  }
  return p;
}

// The studies whose bundle lines were commented out (the merged environment's "left out" lines).
std::set<std::string> removed_studies(const Json& summary) {
  std::set<std::string> out;
  for (const auto& l : summary.value("env", Json::array())) {
    if (!l.value("left_out", false)) continue;
    for (const auto& s : l.value("from", Json::array())) {
      if (s.is_string()) out.insert(s.get<std::string>());
    }
  }
  return out;
}

// Certified against delivered, per study and size, with their 95% intervals: what acceltune
// measured inside its kernels beside what a plain job measured with the files loaded. Studies
// whose params no job loads (advice) are left out; a study with lines removed from the bundle is
// marked.
std::string gains_chart_html(const Json& summary, const std::vector<StudyData>& studies) {
  std::map<std::string, Json> bundle_of;  // space -> the bundle's per-size figures
  for (const auto& f : summary.value("families", Json::array())) {
    for (const auto& s : f.value("studies", Json::array())) {
      if (s.contains("bundle") && s["bundle"].is_object()) bundle_of[text_of(s, "space")] = s["bundle"].value("sizes", Json::array());
    }
  }
  const std::set<std::string> removed = removed_studies(summary);
  svg::Chart c;
  c.x.scale = svg::Scale::category;
  c.x.label = "study and message size";
  c.y.scale = svg::Scale::log10;
  c.y.label = "ratio to the library's defaults (x)";
  c.y.min = 0.25;
  c.y.max = 8;
  svg::Series cert{"certified (inside acceltune)", {}, svg::palette(0)}, own{"delivered: own plan", {}, svg::palette(1)},
      bund{"delivered: bundle", {}, svg::palette(2)}, one{"no change (1x)", {}, "#999999"};
  cert.line = own.line = bund.line = false;
  own.marker = svg::Marker::square;
  bund.marker = svg::Marker::diamond;
  one.dashed = true;
  one.marker = svg::Marker::none;
  for (const auto& s : studies) {
    const FamilyInfo* family = family_of_kernel(s.best.kernel);
    if (family && !family->advice.empty()) continue;
    const Json bundle = bundle_of.count(s.space.name()) ? bundle_of[s.space.name()] : Json::array();
    for (const auto& z : s.best.sizes) {
      const double x = static_cast<double>(c.x.categories.size());
      // The size, and under it the study (marked where its bundle lines were removed).
      c.x.categories.push_back(format_bytes(z.bytes) + "\n" + s.space.name() +
                               (removed.count(s.space.name()) ? " (lines removed)" : ""));
      if (z.certified_ratio) {
        cert.points.push_back(ratio_point(x, *z.certified_ratio, z.ci_low.value_or(NAN), z.ci_high.value_or(NAN)));
      }
      if (z.delivered) own.points.push_back(ratio_point(x, z.delivered->ratio, z.delivered->ci_low, z.delivered->ci_high));
      for (const auto& b : bundle) {
        if (b.value("bytes", uint64_t{0}) != z.bytes) continue;
        bund.points.push_back(ratio_point(x, b.value("ratio", 1.0), b.value("ci_low", NAN),
                                          b["ci_high"].is_number() ? b["ci_high"].get<double>() : NAN));
      }
    }
  }
  if (c.x.categories.empty()) return "";
  one.points = {{-0.5, 1.0}, {static_cast<double>(c.x.categories.size()) - 0.5, 1.0}};
  c.series = {one, cert, own, bund};
  c.width = std::clamp(140.0 + 96.0 * static_cast<double>(c.x.categories.size()), 560.0, 1060.0);
  c.height = 360;
  return "<figure>\n" + svg::render(c) +
         "\n<figcaption>Per study and message size: the certified gain (measured inside acceltune, the chosen config "
         "interleaved with the default) beside the delivered gains (a plain job of the family with the study's own "
         "plan, and with the merged bundle, interleaved with its defaults), each with its 95% interval; the axis "
         "shows 0.25x to 8x, a wider interval runs to its edge. \"(lines removed)\": some of the study's lines were "
         "written commented out of the bundle (see The merged environment).</figcaption>\n</figure>\n";
}

}  // namespace

std::string bringup_html(const Json& summary, const std::vector<StudyData>& studies) {
  const Json fp = summary.value("fingerprint", Json::object());
  std::string o = page_start("acceltune bring-up");
  o += "<h1>acceltune bring-up</h1>\n";
  if (summary.value("partial", false)) {
    o += fmt::format("<p class=\"warn\">Partial: bring-up was cancelled by {}; the bundle holds only the studies "
                     "finished before.</p>\n",
                     h(summary["cancelled_by"].is_string() ? summary["cancelled_by"].get<std::string>() : "a signal"));
  }
  o += "<section id=\"node\">\n<table class=\"kv\">\n";
  o += fmt::format("<tr><th>node</th><td>{}</td></tr>\n", h(fingerprint_summary(fp)));
  o += fmt::format("<tr><th>time</th><td>{} to {} (UTC): {:.0f} s of a {:.0f} s time limit, which bounds the whole "
                   "bring-up: searching, certification, delivered measurements and the bundle's</td></tr>\n",
                   h(text_of(summary, "started")), h(text_of(summary, "finished")), summary.value("seconds", 0.0),
                   summary.value("time_limit_seconds", 0.0));
  o += "</table>\n</section>\n";

  o += "<section id=\"families\">\n<h2>Families</h2>\n<p class=\"note\">Certified: measured inside acceltune, the "
       "chosen config interleaved with the default. Delivered: a plain job of the family started the way users "
       "start it, with the files loaded, interleaved with its defaults; \"own plan\" loads the study's own "
       "exports, \"bundle\" the merged bundle.</p>\n<table>\n";
  o += "<tr><th>family</th><th>study</th><th>state</th><th>trials</th><th>certified (search)</th>"
       "<th>delivered (own plan)</th><th>delivered (bundle)</th><th>against the link's ceiling</th></tr>\n";
  std::string skipped;
  for (const auto& f : summary.value("families", Json::array())) {
    if (f["skipped"].is_string()) {
      skipped += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", h(text_of(f, "name")), h(text_of(f, "what")),
                             h(f["skipped"].get<std::string>()));
      continue;
    }
    for (const auto& s : f.value("studies", Json::array())) {
      const std::string state = text_of(s, "state");
      o += fmt::format("<tr><td>{}</td><td><a href=\"#{}-best\">{}</a></td><td>{}{}</td><td class=\"num\">{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       h(text_of(f, "name")), h(text_of(s, "space")), h(text_of(s, "space")), h(state),
                       text_of(s, "why").empty() ? "" : ": " + h(text_of(s, "why")),
                       s.contains("trials") ? json_text(s["trials"]) : "-",
                       h(s.contains("certified") ? text_of(s, "certified") : "-"),
                       h(s.contains("delivered_own") ? text_of(s, "delivered_own") : "-"), bundle_cell(s),
                       efficiency_cell(s));
    }
  }
  o += "</table>\n";
  o += gains_chart_html(summary, studies);
  o += fmt::format("<p class=\"note\">Against the link's ceiling: the best certified figure over the ceiling of the link "
                   "the study crossed ({}); the links and their ceilings are listed under Links.</p>\n",
                   h(verdict_thresholds_text()));
  if (!skipped.empty()) {
    o += "<h3>Skipped</h3>\n<table>\n<tr><th>family</th><th>what it tunes</th><th>why not here</th></tr>\n" + skipped +
         "</table>\n";
  }
  o += "</section>\n";

  o += "<section id=\"links\">\n<h2>Links</h2>\n" + links_table_html(fp) + "</section>\n";

  o += "<section id=\"load\">\n<h2>What to load, and how</h2>\n<table>\n";
  const std::pair<const char*, const char*> files[] = {
      {"job.sh", "runs a job with the whole bundle: <code>BUNDLE/job.sh mpirun -np 8 ./app</code> (Open MPI: every "
                 "variable forwarded with -x), <code>BUNDLE/job.sh srun ./app</code>, <code>BUNDLE/job.sh ./app</code>"},
      {"acceltune.env", "every job-wide variable, one value each, with the study and gain behind it "
                        "(<code>set -a; . ./acceltune.env; set +a</code>)"},
      {"ucx.env", "the UCX variables of acceltune.env"},
      {"ompi-rules.conf", "Open MPI's per-size algorithm rules (acceltune.env switches them on)"},
      {"nccl-tuner.conf", "the NCCL tuner-plugin table (NCCL_TUNER_PLUGIN=acceltune and NCCL_TUNER_CONFIG_FILE)"},
      {"tcp-settings.sh", "the tuned link and TCP-stack settings: review it and run it as root; acceltune never runs it"},
      {"bringup.json", "this page's figures, for scripts"}};
  for (const auto& [name, what] : files) o += fmt::format("<tr><td><code>{}</code></td><td>{}</td></tr>\n", name, what);
  o += "</table>\n</section>\n";

  o += "<section id=\"env\">\n<h2>The merged environment</h2>\n";
  const Json env = summary.value("env", Json::array());
  if (env.empty()) {
    o += "<p>No study's plan sets a variable: every library keeps its own defaults.</p>\n";
  } else {
    o += "<table>\n<tr><th>variable</th><th>value</th><th>why</th></tr>\n";
    for (const auto& l : env) {
      o += fmt::format("<tr><td><code>{}</code></td><td><code>{}</code>{}</td><td>{}</td></tr>\n", h(text_of(l, "var")),
                       h(text_of(l, "value")), l.value("left_out", false) ? " (left out)" : "", h(text_of(l, "why")));
    }
    o += "</table>\n";
  }
  for (const auto& n : summary.value("notes", Json::array())) {
    if (n.is_string()) o += fmt::format("<p class=\"note\">{}</p>\n", h(n.get<std::string>()));
  }
  o += "</section>\n";

  for (const auto& s : studies) {
    o += fmt::format("<section id=\"study-{}\">\n<h2>{}</h2>\n<p class=\"note\">study <code>{}</code>: {}</p>\n",
                     h(s.space.name()), h(s.space.name()), h(s.dir), h(s.space.description()));
    o += study_sections_html(s, s.space.name());
    o += "</section>\n";
  }
  return o + page_end();
}

}  // namespace acceltune
