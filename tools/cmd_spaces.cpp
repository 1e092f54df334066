// acceltune spaces: the shipped spaces, one line each; with --params NAME, the params a kernel
// (or the kernel of a shipped space) applies itself, as its table declares them, a library's
// environment variables (nccl, ucx, openmpi), and a space's env-bound params.
#include "tools/cli.hpp"
#include "tools/spaces_path.hpp"
#include "tuner/env_params.hpp"
#include "tuner/native_params.hpp"

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
    const KernelInfo* info = KernelRegistry::instance().find(space->kernel());
    if (info && !info->listed) continue;  // a test family's space
    auto kernel = make_kernel(*space);
    const std::string state = kernel ? fmt::format("{} configs", space->count_valid())
                                     : fmt::format("unavailable: {}", kernel.error().message);
    std::printf("%-20s kernel %-12s %-16s %s\n", e.name.c_str(), space->kernel().c_str(), state.c_str(),
                space->description().c_str());
  }
  return 0;
}

void print_kernel_table(const std::string& kernel) {
  const KernelInfo* info = KernelRegistry::instance().find(kernel);
  const auto k = info->make();
  const NativeTable& table = k->native_table();
  std::printf("kernel %s: %s\n", kernel.c_str(), info->description.c_str());
  if (k->native_params() == std::vector<std::string>{"*"}) {
    std::printf("it takes every param of its space as its own (the landscape names them)\n");
  } else if (table.empty()) {
    std::printf("it applies no param itself: every param of its spaces is an environment variable (\"env\")\n");
  } else {
    std::printf("params it applies itself (a space that omits one measures at its default):\n\n%s",
                format_native_table(table).c_str());
  }
}

void print_env_table(const std::string& name, bool after) {
  const EnvTable* t = EnvTableRegistry::instance().find(name);
  std::printf("%s%s variables a space binds with \"env\" (%s*; unset leaves the choice to %s):\n\n%s", after ? "\n" : "",
              t->library.c_str(), t->prefix.c_str(), t->library.c_str(), format_native_table(t->rows).c_str());
}

// NAME is a kernel, a library's variables or a shipped space; for a space, its env-bound params
// follow the kernel's table.
int cmd_space_params(const std::string& name) {
  const bool kernel = KernelRegistry::instance().find(name) != nullptr;
  if (kernel) print_kernel_table(name);
  if (EnvTableRegistry::instance().find(name)) print_env_table(name, kernel);
  if (kernel || EnvTableRegistry::instance().find(name)) return 0;
  for (const auto& e : shipped_spaces()) {
    if (e.name != name) continue;
    auto space = Space::load_file(e.path);
    if (!space) return fail(space.error());
    if (!KernelRegistry::instance().find(space->kernel())) {
      return fail(input_error("space '{}' names kernel '{}', which this build lacks", name, space->kernel()));
    }
    print_kernel_table(space->kernel());
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : space->params()) {
      if (p.env.empty()) continue;
      std::string values;
      for (const auto& v : p.values) values += (values.empty() ? "" : ", ") + to_string(v);
      rows.push_back({p.name, p.env, values, to_string(p.default_value()), p.doc});
    }
    if (!rows.empty()) {
      std::printf("\nspace %s: params set as environment variables:\n\n", name.c_str());
      rows.insert(rows.begin(), {"name", "variable", "values", "default", "doc"});
      std::vector<size_t> width(5, 0);
      for (const auto& r : rows) {
        for (size_t c = 0; c < 4; ++c) width[c] = std::max(width[c], r[c].size());
      }
      for (const auto& r : rows) {
        std::string line;
        for (size_t c = 0; c < 5; ++c) line += r[c] + (c < 4 ? std::string(width[c] - r[c].size() + 2, ' ') : "");
        std::printf("%s\n", line.c_str());
      }
    }
    return 0;
  }
  std::vector<std::string> kernels;
  for (const auto& [k, info] : KernelRegistry::instance().entries()) {
    if (info.listed) kernels.push_back(k);
  }
  return fail(input_error("--params {}: no kernel or shipped space of that name, nor a library's variables (kernels: "
                          "{}; libraries: {}; `acceltune spaces` lists the spaces)",
                          name, join_names(kernels), join_names(EnvTableRegistry::instance().names())));
}

}  // namespace

void add_spaces_command(CLI::App& app, CommandList& list) {
  auto* spaces = app.add_subcommand("spaces", "list the shipped spaces, one line each; --params NAME: the params "
                                              "of a kernel, a library or a space, with domains and defaults");
  auto params = std::make_shared<std::string>();
  spaces->add_option("--params", *params,
                     "print the param table of a kernel (host-copy, tcp-stream, ...), a library's variables "
                     "(nccl, ucx, openmpi), or a shipped space's kernel with the space's env-bound params");
  list.add(spaces, [params] { return params->empty() ? cmd_spaces() : cmd_space_params(*params); });
}

}  // namespace acceltune::cli
