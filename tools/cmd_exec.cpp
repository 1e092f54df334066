// acceltune exec: run a command with the study's plan loaded: its job-wide variables and the
// switches of its per-size files (the same lines as the env export).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tools/bundle_input.hpp"
#include "tools/cli.hpp"
#include "tuner/env_file.hpp"
#include "tuner/delivery.hpp"
#include "tuner/plan.hpp"

namespace acceltune::cli {
namespace {

namespace fs = std::filesystem;

// A bring-up bundle's merged acceltune.env (tools/bundle_input.hpp); a study's plan's variables
// (tuner/plan.hpp), as the env export writes them (what it holds back from other paths is not set,
// and said), with its per-size files written into the study directory; or the lines of an env file.
Expected<std::vector<std::pair<std::string, std::string>>> env_of_config(const std::string& path) {
  std::error_code ec;
  BestTable b;
  if (is_bundle(path)) return bundle_env(path);
  if (fs::is_directory(path, ec)) {
    ACCELTUNE_TRY_ASSIGN(StudyData s, load_study_best(path));
    b = std::move(s.best);
  } else if (fs::path(path).extension() == ".json") {
    // A study's best.json: the study is the folder it lies in.
    const std::string dir = fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path().string();
    if (fs::exists(fs::path(dir) / "study.json", ec)) {
      ACCELTUNE_TRY_ASSIGN(StudyData s, load_study_best(dir));
      b = std::move(s.best);
    } else {
      std::ifstream in(path);
      if (!in) return input_error("{}: cannot read: {}", path, std::strerror(errno));
      const Json best_json = Json::parse(in, nullptr, false);
      if (best_json.is_discarded()) return input_error("{}: malformed JSON", path);
      auto t = BestTable::from_json(best_json);
      if (!t) return input_error("{}: {}", path, t.error().message);
      b = std::move(*t);
    }
  } else {
    std::ifstream in(path);
    if (!in) return input_error("{}: cannot read: {}", path, std::strerror(errno));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ACCELTUNE_TRY_ASSIGN(EnvFileText parsed, parse_env_text(text, path));
    const fs::path folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
    if (is_bundle_dir(folder)) relocate_bundle_files(parsed.vars, folder);    // Its paths are absolute (a bundle's acceltune.env holds where the bundle was written): one
    // that no longer exists would leave the library at its own choice without a word.
    for (const auto& [var, value] : parsed.vars) {
      if (value.size() > 1 && value[0] == '/' && !fs::exists(value, ec)) {
        return input_error("{}: {} names {}, which does not exist (a moved or copied bundle loads through its "
                           "job.sh or as --config BUNDLE, which find its files beside it)",
                           path, var, value);
      }
    }
    return parsed.vars;
  }
  if (!b.overall_trial) return runtime_error("{}: the study has no config that measured ok", path);
  ACCELTUNE_TRY(write_plan_files(b));
  ACCELTUNE_TRY_ASSIGN(PlanEnv pe, plan_env(b));
  for (const auto& h : pe.held) {
    std::fprintf(stderr, "acceltune exec: not set: %s=%s (%s)\n", h.var.c_str(), h.value.c_str(), h.why.c_str());
  }
  return pe.vars;
}

int cmd_exec(const std::string& config, const std::vector<std::string>& command, bool verbose) {
  if (command.empty()) return fail(input_error("exec needs a command after '--'"));
  auto vars = env_of_config(config);
  if (!vars) return fail(vars.error());
  // acceltune's own measurement hygiene (UCX_HANDLE_ERRORS=none) is not the job's.
  for (const auto& name : hygiene_env_names()) ::unsetenv(name.c_str());
  for (const auto& [k, v] : *vars) {
    if (verbose) std::fprintf(stderr, "acceltune exec: %s=%s\n", k.c_str(), v.c_str());
    setenv(k.c_str(), v.c_str(), 1);
  }
  std::vector<char*> argv;
  for (const auto& s : command) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execvp(argv[0], argv.data());
  const int err = errno;
  return fail(Error{err == ENOENT ? ErrorKind::input : ErrorKind::runtime,
                    fmt::format("exec: cannot run '{}': {}", command[0], std::strerror(err))});
}

}  // namespace

void add_exec_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string config;
    std::vector<std::string> command;
    bool verbose = false;
  };
  auto a = std::make_shared<Args>();
  auto* ex = app.add_subcommand("exec", "run a command with the best config's environment variables set");
  ex->add_option("--config", a->config,
                 "a bring-up bundle (its merged acceltune.env), a study directory, its best.json, or an env file "
                 "(KEY=VALUE lines)")
      ->required();
  ex->add_flag("-v,--verbose", a->verbose, "print each variable set");
  ex->add_option("command", a->command, "the command and its arguments, after '--'")->required();
  ex->footer("Examples: acceltune exec --config acceltune-results/bringup-20261207T120000 -- mpirun -np 2 ./app   (a bundle)\n"
             "          acceltune exec --config acceltune-results/mpi-allreduce-1 -- ./train.sh   (one study)");
  list.add(ex, [a] { return cmd_exec(a->config, a->command, a->verbose); });
}

}  // namespace acceltune::cli
