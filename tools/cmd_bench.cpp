// acceltune bench: measure one config (the default, changed by --set).
#include <cmath>

#include "tools/cli.hpp"
#include "tuner/cancel.hpp"
#include "tuner/process_guard.hpp"
#include "tuner/runner.hpp"

namespace acceltune::cli {
namespace {

struct BenchArgs {
  std::string space, sizes;
  std::vector<std::string> sets;
  double target = 0.02, max_seconds = 1.0;
  bool json = false;
  int ranks = 0;
  PlacementArgs placement;
};

int cmd_bench(const BenchArgs& a) {
  const std::vector<std::string>& sets = a.sets;
  const double target = a.target, max_seconds = a.max_seconds;
  const bool as_json = a.json;
  auto prep = prepare(a.space, a.sizes, a.placement, /*to_tune=*/false, with_ranks(nullptr, a.ranks));
  if (!prep) return fail(prep.error());
  Prepared& p = *prep;
  Config c = p.space.default_config();
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) return fail(input_error("--set '{}' must be PARAM=VALUE", s));
    Status st = p.space.set_value(c, s.substr(0, eq), s.substr(eq + 1));
    if (!st) return fail(st.error());
  }
  const std::string why = p.space.why_invalid(c);
  if (!why.empty()) return fail(input_error("config {} is not valid: {}", p.space.key(c), why));
  // Through the trial runner, so a config is measured the way a search measures it: in a
  // worker with its environment when the space or kernel needs one.
  RunnerOptions ro;
  ro.measure.target_rel_halfwidth = target;
  ro.measure.max_seconds = max_seconds;
  ro.worker_command = worker_command();
  auto iso = resolve_isolation(p.space, *p.kernel, Isolation::automatic);
  if (!iso) return fail(iso.error());
  ro.isolation = *iso;
  TrialRunner runner(p.space, *p.kernel, ro);
  install_cancel_handlers();
  auto guard = ProcessGuard::start();  // what the trial starts ends with this process
  if (!guard) return fail(guard.error());
  const Trial trial = runner.run(c, 0, p.workload.sizes);
  if (cancel_requested()) {
    std::fprintf(stderr, "acceltune: bench cancelled by %s\n", signal_name(cancel_signal()).c_str());
    return 128 + cancel_signal();
  }
  Json results = Json::array();
  if (!as_json) {
    std::printf("config: %s\n", p.space.key(c).c_str());
    std::printf("%-8s %12s %12s %12s %8s %10s  %s\n", "size", ("median " + p.kernel->unit()).c_str(), "p10", "p90",
                "+-ci", "samples", "state");
  }
  const bool all_ok = trial.state == State::ok;
  for (const Measurement& m : trial.measurements) {
    const uint64_t bytes = m.bytes;
    if (as_json) {
      results.push_back(m.to_json());
      continue;
    }
    std::printf("%-8s %12s %12s %12s %7.1f%% %5zux%-4lld  %s%s%s\n", format_bytes(bytes).c_str(),
                format_value(m.value).c_str(), format_value(m.value_p10).c_str(), format_value(m.value_p90).c_str(),
                std::isfinite(m.rel_halfwidth) ? 100 * m.rel_halfwidth : 0.0, m.samples_seconds.size(),
                static_cast<long long>(m.runs_per_sample), std::string(to_string(m.state)).c_str(),
                m.error.empty() ? "" : ": ", m.error.c_str());
  }
  if (as_json) {
    std::printf("%s\n", Json{{"config", p.space.config_to_json(c)}, {"measurements", results}}.dump(2).c_str());
  }
  return all_ok ? 0 : 1;
}

}  // namespace

void add_bench_command(CLI::App& app, CommandList& list) {
  auto args = std::make_shared<BenchArgs>();
  BenchArgs& a = *args;
  auto* bench = app.add_subcommand("bench", "measure one config (the default, changed by --set)");
  bench->add_option("--space", a.space, "a shipped space's name or a space file")->required();
  bench->add_option("--set", a.sets, "PARAM=VALUE, repeatable");
  bench->add_option("--sizes", a.sizes, "message sizes (default: the space's)");
  bench->add_option("--target", a.target, "relative half-width of the median's 95% interval to reach")
      ->check(CLI::Range(0.0001, 1.0));
  add_duration_option(bench, "--max-seconds", a.max_seconds, "measurement time cap per size (default 1)",
                      {.min_seconds = 0.001, .max_seconds = 3600});
  bench->add_flag("--json", a.json, "print the measurements as JSON");
  bench->footer("Example: acceltune bench --space host-copy --set threads=2 --set chunk=1M --sizes 64M");
  add_placement_options(bench, a.placement);
  add_ranks_option(bench, a.ranks);
  list.add(bench, [args] { return cmd_bench(*args); });
}

}  // namespace acceltune::cli
