// acceltune export: a study's best configuration in a library's format.
#include "tools/cli.hpp"
#include "tuner/atomic_file.hpp"
#include "tuner/plan.hpp"

namespace acceltune::cli {
namespace {

int cmd_export(const std::string& dir, const std::string& format, const std::string& out_file) {
  auto s = load_study_best(dir);
  if (!s) return fail(s.error());
  // The env lines name the plan's per-size files in the study directory: they exist once exported.
  if (Status st = write_plan_files(s->best); !st) return fail(st.error());
  auto text = emit(format, s->best);
  if (!text) return fail(text.error());
  if (out_file.empty() || out_file == "-") {
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
  }
  if (Status st = write_file_atomically(out_file, *text, {.what = "the export"}); !st) return fail(st.error());
  return 0;
}


}  // namespace

void add_export_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::string dir, format, out;
  };
  auto a = std::make_shared<Args>();
  std::string formats;
  for (const auto& [name, info] : EmitterRegistry::instance().entries()) {
    formats += fmt::format("\n  {:<12} {}", name, info.description);
  }
  auto* exp = app.add_subcommand("export", "write a study's best configuration in a library's format");
  exp->add_option("DIR", a->dir, "study directory")->required();
  exp->add_option("--format", a->format, "one of:" + formats)->required();
  exp->add_option("-o,--output", a->out, "file to write (default: standard output)");
  list.add(exp, [a] { return cmd_export(a->dir, a->format, a->out); });
}

}  // namespace acceltune::cli
