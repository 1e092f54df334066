// The bring-up page (`acceltune bringup`'s report.html): the node, every family with its studies'
// certified and delivered gains, what was skipped and why, how a job loads the bundle, the merged
// environment with its notes, then each study's own sections from the report page.
#include <map>

#include "results/html_page.hpp"
#include "results/report_html.hpp"
#include "probe/links.hpp"

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
  o += fmt::format("<tr><th>time</th><td>{} to {} (UTC): {:.0f} s, of which {:.0f} s searching by the time limit, "
                   "then certification and delivered measurements</td></tr>\n",
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
