// acceltune exec: run a command with the best config's environment variables set.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tools/cli.hpp"

namespace acceltune::cli {
namespace {

namespace fs = std::filesystem;

Expected<std::vector<std::pair<std::string, std::string>>> env_of_config(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> vars;
  std::error_code ec;
  Json best_json;
  if (fs::is_directory(path, ec)) {
    ACCELTUNE_TRY_ASSIGN(LoadedStudy s, load_study(path));
    best_json = s.best.to_json();
  } else if (fs::path(path).extension() == ".json") {
    std::ifstream in(path);
    if (!in) return input_error("{}: cannot read: {}", path, std::strerror(errno));
    best_json = Json::parse(in, nullptr, false);
    if (best_json.is_discarded()) return input_error("{}: malformed JSON", path);
  } else {
    std::ifstream in(path);
    if (!in) return input_error("{}: cannot read: {}", path, std::strerror(errno));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      const auto eq = line.find('=');
      if (eq == std::string::npos || eq == 0) {
        return input_error("{}:{}: expected KEY=VALUE, got '{}'", path, n, line);
      }
      vars.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    }
    return vars;
  }
  ACCELTUNE_TRY_ASSIGN(BestTable b, BestTable::from_json(best_json));
  if (!b.overall_trial) return runtime_error("{}: the study has no config that measured ok", path);
  for (const auto& [param, var] : b.env) {
    if (!b.export_config.contains(param)) continue;
    const Json& v = b.export_config[param];
    if (unsets_env(v)) continue;  // the library decides
    vars.emplace_back(var, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return vars;
}

int cmd_exec(const std::string& config, const std::vector<std::string>& command, bool verbose) {
  if (command.empty()) return fail(input_error("exec needs a command after '--'"));
  auto vars = env_of_config(config);
  if (!vars) return fail(vars.error());
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
  ex->add_option("--config", a->config, "a study directory, its best.json, or an env file (KEY=VALUE lines)")
      ->required();
  ex->add_flag("-v,--verbose", a->verbose, "print each variable set");
  ex->add_option("command", a->command, "the command and its arguments, after '--'")->required();
  ex->footer("Example: acceltune exec --config acceltune-results/nccl-1 -- ./train.sh");
  list.add(ex, [a] { return cmd_exec(a->config, a->command, a->verbose); });
}

}  // namespace acceltune::cli
