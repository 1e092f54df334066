// acceltune spaces: the shipped spaces, one line each.
#include "tools/cli.hpp"
#include "tools/spaces_path.hpp"

namespace acceltune::cli {
namespace {

int cmd_spaces() {
  const auto entries = shipped_spaces();
  if (entries.empty()) {
    std::fprintf(stderr, "acceltune: no shipped spaces found; set ACCELTUNE_SPACES_PATH to a folder of .json spaces\n");
    return 1;
  }
  for (const auto& e : entries) {
    auto space = Space::load_file(e.path);
    if (!space) {
      std::printf("%-20s (unusable: %s)\n", e.name.c_str(), space.error().message.c_str());
      continue;
    }
    auto kernel = make_kernel(*space);
    const std::string state = kernel ? fmt::format("{} configs", space->count_valid())
                                     : fmt::format("unavailable: {}", kernel.error().message);
    std::printf("%-20s kernel %-12s %-16s %s\n", e.name.c_str(), space->kernel().c_str(), state.c_str(),
                space->description().c_str());
  }
  return 0;
}


}  // namespace

void add_spaces_command(CLI::App& app, CommandList& list) {
  auto* spaces = app.add_subcommand("spaces", "list the shipped spaces, one line each");
  list.add(spaces, [] { return cmd_spaces(); });
}

}  // namespace acceltune::cli
