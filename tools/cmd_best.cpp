// acceltune best: the best-per-size table of a study, or of each study of a bring-up bundle.
#include <fstream>
#include <map>

#include "tools/bundle_input.hpp"
#include "tools/cli.hpp"

namespace acceltune::cli {
namespace {

void print_study(const std::string& dir, const StudyData& s) {
  std::printf("study %s: space %s, %lld trials (%lld ok)\n", dir.c_str(), s.best.space.c_str(),
              static_cast<long long>(s.best.trials), static_cast<long long>(s.best.trials_ok));
  print_best_table(s.best, s.study.value("space", Json::object()), stdout);
  print_efficiency(s.study, s.best, stdout);
}

// What bring-up measured of the merged bundle through each study's client, by space (bringup.json).
std::map<std::string, std::string> under_the_bundle(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::ifstream in(dir + "/" + kBundleMarker);
  const Json summary = Json::parse(in, nullptr, false);
  if (!summary.is_object() || !summary.contains("families") || !summary["families"].is_array()) return out;
  for (const auto& f : summary["families"]) {
    for (const auto& s : f.value("studies", Json::array())) {
      if (!s.is_object() || !s.contains("bundle") || !s["bundle"].is_object()) continue;
      out[s.value("space", "")] = s["bundle"].value("text", "");
    }
  }
  return out;
}

// A bundle: what its jobs load (acceltune.env), then each study's table, as bring-up left it, with
// what the merged bundle delivered through its client.
int best_of_bundle(const std::string& dir, const std::string& only, bool as_json) {
  auto dirs = bundle_study_dirs(dir, only);
  if (!dirs) return fail(dirs.error());
  Json all = Json::object();
  const auto text = under_the_bundle(dir);
  if (!as_json) {
    auto env = bundle_env(dir);
    if (!env) return fail(env.error());
    std::printf("bundle %s: %zu stud%s; its jobs load acceltune.env (%zu variable%s; job.sh COMMAND sets them): the "
                "studies' own plans below are what each measured alone, before the merge\n",
                dir.c_str(), dirs->size(), dirs->size() == 1 ? "y" : "ies", env->size(), env->size() == 1 ? "" : "s");
    for (const auto& [var, value] : *env) std::printf("  %s=%s\n", var.c_str(), value.c_str());
  }
  for (const auto& d : *dirs) {
    auto s = load_study_best(d);
    if (!s) return fail(s.error());
    if (as_json) {
      all[s->best.space] = s->best.to_json();
      continue;
    }
    std::printf("\n");
    print_study(d, *s);
    if (const auto it = text.find(s->best.space); it != text.end() && !it->second.empty()) {
      std::printf("under the merged bundle (bring-up's measurement; acceltune verify %s measures it again): %s\n",
                  dir.c_str(), it->second.c_str());
    }
  }
  if (as_json) std::printf("%s\n", all.dump(2).c_str());
  return 0;
}

int cmd_best(const std::string& dir, const std::string& only, bool as_json) {
  if (is_bundle(dir)) return best_of_bundle(dir, only, as_json);
  if (!only.empty()) return fail(input_error("--study {}: {} is a study, not a bring-up bundle (no bringup.json)", only, dir));
  auto s = load_study_best(dir);
  if (!s) return fail(s.error());
  if (as_json) {
    std::printf("%s\n", s->best.to_json().dump(2).c_str());
    return 0;
  }
  print_study(dir, *s);
  return 0;
}

}  // namespace

void add_best_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string dir, study;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* best = app.add_subcommand("best", "print the best-per-size table of a study, or of each study of a bundle");
  best->add_option("DIR", a->dir, "a study directory, or a bring-up bundle")->required();
  best->add_option("--study", a->study, "with a bundle: only the study of this space (e.g. mpi-allreduce)");
  best->add_flag("--json", a->json, "print best.json (a bundle: one object, each study's under its space's name)");
  list.add(best, [a] { return cmd_best(a->dir, a->study, a->json); });
}

}  // namespace acceltune::cli
