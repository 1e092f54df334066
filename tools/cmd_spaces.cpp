// acceltune spaces: the shipped spaces, one line each; with --params NAME, the params a kernel
// (or the kernel of a shipped space) applies itself, as its table declares them, a library's
// environment variables (nccl, ucx, openmpi), and a space's env-bound params.
#include "tools/cli.hpp"
#include "tools/spaces_path.hpp"
#include "tuner/env_params.hpp"
#include "tuner/native_params.hpp"

namespace acceltune::cli {
namespace {

constexpr size_t kWidth = 100;  // every line of the listing fits this many characters

// `text` after `first` (already `indent` wide), words wrapped within kWidth, continuation lines
// indented by `indent` spaces.
std::string wrapped(const std::string& first, const std::string& text, size_t indent) {
  std::string out = first, line = first;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    const bool fresh = line.size() <= indent;
    if (!fresh && line.size() + 1 + word.size() > kWidth) {
      out += "\n" + std::string(indent, ' ');
      line = std::string(indent, ' ');
    }
    const std::string piece = (line.size() <= indent ? "" : " ") + word;
    out += piece;
    line += piece;
  }
  return out + "\n";
}

// What this machine can run first, one space a line (wrapped within 100 characters); then the
// rest grouped by why they cannot run here.
int cmd_spaces() {
  const auto entries = shipped_spaces();
  if (entries.empty()) {
    std::fprintf(stderr, "acceltune: no shipped spaces found; set ACCELTUNE_SPACES_PATH to a folder of .json spaces\n");
    return 1;
  }
  std::string runnable;
  std::map<std::string, std::vector<std::string>> not_here;  // why -> spaces
  for (const auto& e : entries) {
    auto space = Space::load_file(e.path);
    if (!space) {
      not_here["unusable: " + space.error().message].push_back(e.name);
      continue;
    }
    const KernelInfo* info = KernelRegistry::instance().find(space->kernel());
    if (info && !info->listed) continue;  // a test family's space
    auto kernel = make_kernel(*space);
    if (!kernel) {
      not_here[kernel.error().message].push_back(e.name);
      continue;
    }
    const std::string head = fmt::format("{:<20} {:<11} {:>6} configs  ", e.name, space->kernel(), space->count_valid());
    runnable += wrapped(head, space->description(), head.size());
  }
  std::printf("Spaces this machine can run (acceltune search --space NAME; --params NAME for their params):\n\n%s",
              runnable.empty() ? "  none\n" : runnable.c_str());
  if (!not_here.empty()) std::printf("\nNot runnable here:\n");
  for (const auto& [why, names] : not_here) {
    std::printf("\n%s", wrapped("  ", why + ":", 2).c_str());
    std::printf("%s", wrapped("    ", join(names, ", "), 4).c_str());
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
