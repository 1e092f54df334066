// acceltune: the command line. It links every backend and calls them only through the
// registries of tuner/; each command is in its own file (cmd_NAME.cpp).
#include <cstdio>
#include <string>

#include "tools/cli.hpp"
#include "tuner/binary.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/runner.hpp"
#include "tuner/service.hpp"

int main(int argc, char** argv) {
  using namespace acceltune::cli;
  // Every process this one starts again (workers, ranks, launches) is this very binary.
  acceltune::set_acceltune_binary(acceltune::running_program());
  // The hidden modes: the trial worker (request on stdin, result on fd 3), and those the
  // backends register (one rank of a launched trial, a kernel's far end).
  if (argc >= 2 && std::string(argv[1]).rfind("__", 0) == 0) {
    if (argc == 2 && std::string(argv[1]) == "__worker") return acceltune::worker_main(0, 3);
    if (const auto* mode = acceltune::HiddenModeRegistry::instance().find(argv[1])) return mode->main(argc, argv);
    std::fprintf(stderr, "acceltune: unknown internal mode '%s'\n", argv[1]);
    return 2;
  }

  CLI::App app{"acceltune: autotuning of accelerator and network communication parameters.\n"
               "Measures real transfers under many settings, searches the space, and writes the best\n"
               "configuration per message size in formats the libraries read.",
               "acceltune"};
  app.require_subcommand(1);
  app.set_version_flag("--version", acceltune::acceltune_version());
  app.footer("Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad input.\n"
             "Run 'acceltune COMMAND --help' for the options of a command.");

  CommandList list;
  add_bringup_command(app, list);
  add_probe_command(app, list);
  add_spaces_command(app, list);
  add_search_command(app, list);
  add_bench_command(app, list);
  add_best_command(app, list);
  add_export_command(app, list);
  add_exec_command(app, list);
  add_serve_command(app, list);
  add_compare_command(app, list);
  add_report_command(app, list);
  add_verify_command(app, list);
  add_lint_command(app, list);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string which = "acceltune";
    for (auto* sub : app.get_subcommands()) which += " " + sub->get_name();
    std::fprintf(stderr, "acceltune: %s\nRun '%s --help' for usage.\n", e.what(), which.c_str());
    return 2;
  }
  for (const auto& [sub, run] : list.commands) {
    if (*sub) return run();
  }
  return 2;
}
