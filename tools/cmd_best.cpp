// acceltune best: the best-per-size table of a study.
#include "tools/cli.hpp"

namespace acceltune::cli {
namespace {

int cmd_best(const std::string& dir, bool as_json) {
  auto s = load_study_best(dir);
  if (!s) return fail(s.error());
  if (as_json) {
    std::printf("%s\n", s->best.to_json().dump(2).c_str());
    return 0;
  }
  std::printf("study %s: space %s, %lld trials (%lld ok)\n", dir.c_str(), s->best.space.c_str(),
              static_cast<long long>(s->best.trials), static_cast<long long>(s->best.trials_ok));
  print_best_table(s->best, s->study.value("space", Json::object()), stdout);
  print_efficiency(s->study, s->best, stdout);
  return 0;
}


}  // namespace

void add_best_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string dir;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* best = app.add_subcommand("best", "print the best-per-size table of a study");
  best->add_option("DIR", a->dir, "study directory")->required();
  best->add_flag("--json", a->json, "print best.json");
  list.add(best, [a] { return cmd_best(a->dir, a->json); });
}

}  // namespace acceltune::cli
