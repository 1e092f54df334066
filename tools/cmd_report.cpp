// acceltune report: one study, or a bring-up bundle, as a self-contained HTML page.
#include <fstream>

#include "results/compare.hpp"
#include "results/report_html.hpp"
#include "tools/bundle_input.hpp"
#include "tools/cli.hpp"

namespace acceltune::cli {
namespace {

// A bundle's page, as bring-up writes it (report.html), from its bringup.json and its studies.
int report_bundle(const std::string& dir, const std::string& html) {
  const std::string path = dir + "/" + kBundleMarker;
  std::ifstream in(path);
  const Json summary = Json::parse(in, nullptr, false);
  if (summary.is_discarded() || !summary.is_object()) return fail(input_error("{}: malformed JSON", path));
  auto studies = load_bundle_studies(dir);
  if (!studies) return fail(studies.error());
  Status st = write_page(html, bringup_html(summary, *studies));
  if (!st) return fail(st.error());
  std::printf("report: bundle %s (%zu studies) -> %s\n", dir.c_str(), studies->size(), html.c_str());
  return 0;
}

int cmd_report(std::string dir, const std::string& only, const std::string& html) {
  if (is_bundle(dir)) {
    if (only.empty()) return report_bundle(dir, html);
    auto dirs = bundle_study_dirs(dir, only);
    if (!dirs) return fail(dirs.error());
    dir = dirs->front();
  } else if (!only.empty()) {
    return fail(input_error("--study {}: {} is a study, not a bring-up bundle (no bringup.json)", only, dir));
  }
  auto s = load_study_dir(dir);
  if (!s) return fail(s.error());
  if (!s->finished) {
    std::fprintf(stderr, "acceltune: %s has no best.json yet (running or stopped); reporting the %zu trials so far\n",
                 dir.c_str(), s->trials.size());
  }
  Status st = write_page(html, report_html(*s));
  if (!st) return fail(st.error());
  std::printf("report: %s (space %s, %zu trials) -> %s\n", dir.c_str(), s->space.name().c_str(), s->trials.size(),
              html.c_str());
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string dir, study, html;
  };
  auto a = std::make_shared<Args>();
  auto* rep = app.add_subcommand("report", "write a study or a bundle as a self-contained HTML page with plots");
  rep->footer(
      "The page has a header (space, kernel, fingerprint, trials, dates), the best table with certified gains,\n"
      "and inline SVG plots: value versus message size for the default and the tuned configs (p10-p90 error\n"
      "bars), search convergence (best objective so far by trial), and each param's effect (median and best\n"
      "objective per value), then the top and the failed trials. It needs no network: no script, font or image\n"
      "is loaded from elsewhere. A study that is still running renders from the trials so far.");
  rep->add_option("DIR", a->dir, "a study directory, or a bring-up bundle (its page, as bring-up wrote report.html)")
      ->required();
  rep->add_option("--study", a->study, "with a bundle: the page of the study of this space instead");
  rep->add_option("--html", a->html, "the HTML file to write")->required();
  list.add(rep, [a] { return cmd_report(a->dir, a->study, a->html); });
}

}  // namespace acceltune::cli
