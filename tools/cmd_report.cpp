// acceltune report: one study as a self-contained HTML page.
#include "results/compare.hpp"
#include "results/report_html.hpp"
#include "tools/cli.hpp"

namespace acceltune::cli {
namespace {

int cmd_report(const std::string& dir, const std::string& html) {
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
    std::string dir, html;
  };
  auto a = std::make_shared<Args>();
  auto* rep = app.add_subcommand("report", "write a study as a self-contained HTML page with plots");
  rep->footer(
      "The page has a header (space, kernel, fingerprint, trials, dates), the best table with certified gains,\n"
      "and inline SVG plots: value versus message size for the default and the tuned configs (p10-p90 error\n"
      "bars), search convergence (best objective so far by trial), and each param's effect (median and best\n"
      "objective per value), then the top and the failed trials. It needs no network: no script, font or image\n"
      "is loaded from elsewhere. A study that is still running renders from the trials so far.");
  rep->add_option("DIR", a->dir, "study directory")->required();
  rep->add_option("--html", a->html, "the HTML file to write")->required();
  list.add(rep, [a] { return cmd_report(a->dir, a->html); });
}

}  // namespace acceltune::cli
