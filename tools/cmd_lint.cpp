// acceltune lint: checks hand-edited tuning files (env and ucx-env files, Open MPI rules, NCCL tuner
// tables, MPICH selection JSON, whole bring-up bundles) against the libraries installed here, and
// prints each problem as FILE:LINE: problem; write ... (results/lint.hpp holds the checks).
#include <algorithm>

#include "results/lint.hpp"
#include "tools/cli.hpp"

namespace acceltune::cli {
namespace {

int cmd_lint(const std::vector<std::string>& files, const std::string& format) {
  LintContext ctx;
  size_t findings = 0;
  for (const auto& f : files) {
    auto r = lint_path(f, format, ctx);
    if (!r) return fail(r.error());
    for (const auto& n : r->notes) std::fprintf(stderr, "acceltune lint: %s\n", n.c_str());
    for (const auto& x : r->findings) std::printf("%s\n", to_string(x).c_str());
    std::fflush(stdout);  // findings before the summary lines on a shared terminal
    if (r->findings.empty()) {
      for (const auto& l : r->linted) std::fprintf(stderr, "acceltune lint: %s: clean\n", l.c_str());
    }
    findings += r->findings.size();
  }
  if (findings == 0) return 0;
  std::fprintf(stderr, "acceltune lint: %zu finding%s\n", findings, findings == 1 ? "" : "s");
  return kExitLintFindings;
}

}  // namespace

void add_lint_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::vector<std::string> files;
    std::string format;
  };
  auto a = std::make_shared<Args>();
  auto* lint = app.add_subcommand("lint", "check hand-edited tuning files (env, rules, tuner tables, selection JSON, "
                                          "bundles) against the libraries installed here");
  lint->add_option("FILE", a->files, "files to check, or bring-up bundle folders (each file in it)")->required();
  lint->add_option("--format", a->format, "the files' format instead of guessing it from name and content")
      ->check(CLI::IsMember(lint_formats()));
  lint->footer("Prints FILE:LINE: problem; write ... per finding. Exit codes: 0 clean, 2 a file unreadable or of no "
               "known format, 5 findings.");
  list.add(lint, [a] { return cmd_lint(a->files, a->format); });
}

}  // namespace acceltune::cli
