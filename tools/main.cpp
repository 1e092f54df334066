// acceltune: the command line. It links every backend and calls them only through the
// registries of tuner/.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "tools/spaces_path.hpp"
#include "tuner/best.hpp"
#include "tuner/fingerprint.hpp"
#include "tuner/runner.hpp"
#include "tuner/study.hpp"

namespace acceltune::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultSpace = "host-copy";
constexpr const char* kResultsRoot = "acceltune-results";

int fail(const Error& e) {
  std::fprintf(stderr, "acceltune: %s\n", e.message.c_str());
  return e.exit_code();
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "?";
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02.0f}s", static_cast<int>(s / 60), std::fmod(s, 60));
  return fmt::format("{}h{:02d}m", static_cast<int>(s / 3600), static_cast<int>(std::fmod(s, 3600) / 60));
}

std::string format_value(double v) {
  if (!std::isfinite(v)) return "-";
  if (std::abs(v) >= 100) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

// A param value as a person reads it: byte-valued params with units.
std::string show_value(const Json& v, const std::string& unit) {
  if (unit == "bytes" && v.is_number_integer() && v.get<int64_t>() > 0) return format_bytes(v.get<uint64_t>());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::map<std::string, std::string> units_of(const Json& space_definition) {
  std::map<std::string, std::string> u;
  if (space_definition.contains("params")) {
    for (const auto& p : space_definition["params"]) u[p.value("name", "")] = p.value("unit", "");
  }
  return u;
}

// The params where a config differs from the default, or "(default)".
std::string describe_config(const Json& config, const Json& default_config,
                            const std::map<std::string, std::string>& units) {
  std::string out;
  for (const auto& [k, v] : config.items()) {
    if (default_config.contains(k) && default_config[k] == v) continue;
    auto u = units.find(k);
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, show_value(v, u == units.end() ? "" : u->second));
  }
  return out.empty() ? "(default)" : out;
}

void print_best_table(const BestTable& b, const Json& space_definition, std::FILE* out) {
  const auto units = units_of(space_definition);
  const std::string unit = b.unit;
  if (b.certified) {
    std::fprintf(out, "%-8s %14s %14s %22s  %s\n", "size", ("default " + unit).c_str(), ("best " + unit).c_str(),
                 "gain [95% interval]", "exported config (trial)");
  } else {
    std::fprintf(out, "%-8s %14s %14s %8s  %s\n", "size", ("default " + unit).c_str(), ("best " + unit).c_str(),
                 "ratio", "best config (trial)");
  }
  for (const auto& s : b.sizes) {
    if (b.certified) {
      if (!s.certified_trial) {
        std::fprintf(out, "%-8s %14s %14s %22s  %s\n", format_bytes(s.bytes).c_str(),
                     s.default_value ? format_value(*s.default_value).c_str() : "-", "-", "-",
                     "(default: no other config measured ok)");
        continue;
      }
      const Candidate* w = nullptr;
      for (const auto& c : s.candidates) {
        if (c.trial == *s.certified_trial) w = &c;
      }
      const std::string gain = fmt::format("{:.2f}x [{:.2f}, {:.2f}]", *s.certified_ratio, s.ci_low.value_or(0),
                                           s.ci_high.value_or(INFINITY));
      const std::string cfg =
          s.significant ? fmt::format("{} (#{})", describe_config(s.chosen_config, b.default_config, units),
                                      *s.certified_trial)
                        : fmt::format("(default) no significant gain from #{}", *s.certified_trial);
      std::fprintf(out, "%-8s %14s %14s %22s  %s\n", format_bytes(s.bytes).c_str(),
                   w ? format_value(w->default_value).c_str() : "-", w ? format_value(w->value).c_str() : "-",
                   gain.c_str(), cfg.c_str());
      continue;
    }
    const std::string def = s.default_value ? format_value(*s.default_value) : "-";
    const std::string best = s.best_trial ? format_value(s.best_value) : "-";
    const std::string ratio = s.ratio ? fmt::format("{:.2f}x", *s.ratio) : "-";
    const std::string cfg = s.best_trial
                                ? fmt::format("{} (#{})", describe_config(s.best_config, b.default_config, units),
                                              *s.best_trial)
                                : "no config measured ok";
    std::fprintf(out, "%-8s %14s %14s %8s  %s\n", format_bytes(s.bytes).c_str(), def.c_str(), best.c_str(),
                 ratio.c_str(), cfg.c_str());
  }
  if (b.ranges.size() > 1 || (b.ranges.size() == 1 && b.sizes.size() > 1)) {
    std::fprintf(out, "ranges:");
    for (const auto& r : b.ranges) {
      // Ranges end just below the next one's first size: print them half-open.
      std::fprintf(out, " [%s, %s) %s;", r.min_bytes == 0 ? "0" : format_bytes(r.min_bytes).c_str(),
                   r.max_bytes == UINT64_MAX ? "max" : format_bytes(r.max_bytes + 1).c_str(),
                   r.is_default ? "default" : describe_config(r.config, b.default_config, units).c_str());
    }
    std::fprintf(out, "\n");
  }
}

std::string timestamp_for_path() {
  std::string t = utc_now_iso8601();  // 2026-12-02T17:52:23Z
  t.erase(std::remove(t.begin(), t.end(), ':'), t.end());
  t.erase(std::remove(t.begin(), t.end(), '-'), t.end());
  if (!t.empty() && t.back() == 'Z') t.pop_back();
  return t;  // 20261202T175223
}

// A new directory name under the results root that no study uses yet.
fs::path fresh_study_dir(const std::string& space_name) {
  const fs::path base = fs::path(kResultsRoot) / fmt::format("{}-{}", space_name, timestamp_for_path());
  fs::path p = base;
  for (int i = 2; fs::exists(p); ++i) p = base.string() + fmt::format("-{}", i);
  return p;
}

// The newest study of a space under the results root, for `search --resume` without --out.
std::optional<fs::path> newest_study_dir(const std::string& space_name) {
  std::error_code ec;
  std::optional<fs::path> best;
  fs::file_time_type best_time{};
  if (!fs::is_directory(kResultsRoot, ec)) return std::nullopt;
  for (const auto& e : fs::directory_iterator(kResultsRoot, ec)) {
    const fs::path study = e.path() / "study.json";
    if (!fs::exists(study, ec)) continue;
    std::ifstream in(study);
    Json j = Json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("space") || j["space"].value("name", "") != space_name) continue;
    const auto t = fs::last_write_time(e.path() / "trials.jsonl", ec);
    if (!best || t > best_time) {
      best = e.path();
      best_time = t;
    }
  }
  return best;
}

Json search_defaults(const Space& space) {
  if (space.extra().contains("search") && space.extra()["search"].is_object()) return space.extra()["search"];
  return Json::object();
}

// ---------------------------------------------------------------------------------- probe
int cmd_probe(bool as_json) {
  const Json f = probe_fingerprint();
  if (as_json) {
    std::printf("%s\n", f.dump(2).c_str());
    return 0;
  }
  std::printf("host        %s\n", f["host"].get<std::string>().c_str());
  std::printf("cpu         %s\n", f["cpu"]["model"].get<std::string>().c_str());
  std::printf("cores       %u logical, %d usable by this process\n", f["cpu"]["logical_cores"].get<unsigned>(),
              f["cpu"].value("usable_cores", 0));
  std::string flags;
  for (const auto& x : f["cpu"]["flags"]) flags += (flags.empty() ? "" : " ") + x.get<std::string>();
  std::printf("cpu flags   %s\n", flags.c_str());
  if (f["memory_bytes"].is_number()) {
    std::printf("memory      %.1f GiB\n", f["memory_bytes"].get<double>() / (1024.0 * 1024 * 1024));
  }
  std::printf("huge pages  %s\n", f["transparent_hugepages"].get<std::string>().c_str());
  std::printf("os          %s, %s %s\n", f["os"]["name"].get<std::string>().c_str(),
              f["os"]["kernel"].get<std::string>().c_str(), f["os"]["machine"].get<std::string>().c_str());
  std::printf("compiler    %s\n", f["compiler"].get<std::string>().c_str());
  std::printf("acceltune   %s\n", f["acceltune"].get<std::string>().c_str());
  std::printf("fingerprint %s\n", f["id"].get<std::string>().c_str());
  return 0;
}

// --------------------------------------------------------------------------------- spaces
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

// Common set-up of search and bench: the space, its kernel attached, and the sizes.
struct Prepared {
  Space space;
  std::unique_ptr<Kernel> kernel;
  Workload workload;
};

Expected<Prepared> prepare(const std::string& space_arg, const std::string& sizes_arg) {
  ACCELTUNE_TRY_ASSIGN(Space space, resolve_space(space_arg.empty() ? kDefaultSpace : space_arg));
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Kernel> kernel, make_kernel(space));
  Workload w;
  w.kernel = space.kernel();
  w.operation = space.operation();
  if (!kernel->sized()) {
    if (!sizes_arg.empty()) {
      return input_error("kernel '{}' has no message sizes; drop --sizes", space.kernel());
    }
    w.sizes = {0};
  } else if (!sizes_arg.empty()) {
    ACCELTUNE_TRY_ASSIGN(w.sizes, parse_sizes(sizes_arg));
  } else {
    w.sizes = space.sizes();
  }
  if (w.sizes.empty()) {
    return input_error("{}: the space lists no message sizes; pass --sizes such as 64K,1M,16M", space.source());
  }
  std::sort(w.sizes.begin(), w.sizes.end());
  w.sizes.erase(std::unique(w.sizes.begin(), w.sizes.end()), w.sizes.end());
  return Prepared{std::move(space), std::move(kernel), std::move(w)};
}

// --------------------------------------------------------------------------------- search
// argv of this binary's hidden worker mode.
std::vector<std::string> worker_command() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return {ec ? std::string("/proc/self/exe") : exe.string(), "__worker"};
}

enum class LogLevel { error, warn, info, debug };

Expected<LogLevel> parse_log_level(const std::string& s) {
  if (s == "error") return LogLevel::error;
  if (s == "warn") return LogLevel::warn;
  if (s == "info") return LogLevel::info;
  if (s == "debug") return LogLevel::debug;
  return input_error("unknown --log-level '{}' (use error, warn, info or debug)", s);
}

struct SearchArgs {
  std::string space, strategy, sizes, out;
  std::string isolation = "auto", log_level = "warn";
  double trial_timeout = 0;
  int certify_top = 3, certify_rounds = 5;
  int64_t budget = 0;
  double time_limit = 0;
  uint64_t seed = 1;
  bool seed_given = false;
  bool resume = false;
  double target = 0.02;
  double max_seconds = 0.5;
};

int cmd_search(const SearchArgs& a) {
  auto prep = prepare(a.space, a.sizes);
  if (!prep) return fail(prep.error());
  Prepared& p = *prep;
  const Json defaults = search_defaults(p.space);

  fs::path out = a.out;
  if (out.empty()) {
    if (a.resume) {
      auto newest = newest_study_dir(p.space.name());
      if (!newest) {
        return fail(input_error("no study of space '{}' under {}/ to resume; pass --out DIR", p.space.name(),
                                kResultsRoot));
      }
      out = *newest;
    } else {
      out = fresh_study_dir(p.space.name());
    }
  }
  auto store = open_store("dir", out.string());
  if (!store) return fail(store.error());

  StudyOptions o;
  o.budget = a.budget > 0 ? a.budget : defaults.value("budget", int64_t{50});
  o.time_limit_seconds = a.time_limit > 0 ? a.time_limit : defaults.value("time_limit_seconds", 0.0);
  o.seed = a.seed;
  o.strategy = a.strategy;
  if (a.resume && (*store)->has_study()) {
    // A resumed study keeps its strategy and seed unless they are given (and then must match).
    auto stored = (*store)->read_study();
    if (!stored) return fail(stored.error());
    if (o.strategy.empty()) o.strategy = stored->value("strategy", "");
    if (!a.seed_given) o.seed = stored->value("seed", uint64_t{1});
  }
  if (o.strategy.empty()) {
    o.strategy = defaults.value("strategy", "");
    if (o.strategy.empty()) {
      o.strategy = p.space.count_valid() <= static_cast<uint64_t>(o.budget) ? "grid" : "random";
    }
  }
  o.resume = a.resume;
  o.measure.target_rel_halfwidth = a.target;
  o.measure.max_seconds = a.max_seconds;
  auto iso = isolation_from_string(a.isolation);
  if (!iso) return fail(iso.error());
  o.isolation = *iso;
  o.worker_command = worker_command();
  o.trial_timeout_seconds = a.trial_timeout;
  o.certify.top = a.certify_top;
  o.certify.rounds = a.certify_rounds;
  auto level = parse_log_level(a.log_level);
  if (!level) return fail(level.error());
  const bool tty = stderr_is_terminal();
  o.on_event = [&, lv = *level](const Json& e) {
    const std::string ev = e.value("event", "");
    std::string line;
    if (ev == "trial_failure" && lv >= LogLevel::warn) {
      line = fmt::format("trial {} {}: {}", e.value("number", 0), e.value("state", ""), e.value("error", ""));
    } else if (ev == "trial_finish" && lv >= LogLevel::info) {
      line = fmt::format("trial {} ok: {} {} in {:.2f} s", e.value("number", 0),
                         e["value"].is_number() ? format_value(e["value"].get<double>()) : "-", p.kernel->unit(),
                         e.value("cost_seconds", 0.0));
    } else if (ev == "certify" && lv >= LogLevel::info) {
      line = fmt::format("certified {}: {}", format_bytes(e.value("bytes", uint64_t{0})),
                         e.contains("ratio") ? fmt::format("{:.3f}x [{:.3f}, {:.3f}]{}", e["ratio"].get<double>(),
                                                           e.value("ci_low", 0.0), e.value("ci_high", 0.0),
                                                           e.value("significant", false) ? "" : ", not significant")
                                             : "no candidate");
    } else if (lv >= LogLevel::debug) {
      line = e.dump();
    }
    if (!line.empty()) std::fprintf(stderr, "%sacceltune: %s\n", tty ? "\r\033[K" : "", line.c_str());
  };
  if (tty) {
    o.on_certify_progress = [](int done, int total) {
      std::fprintf(stderr, "\r\033[Kcertifying gains against the default: %d/%d measurements", done, total);
      std::fflush(stderr);
    };
  }
  if (tty) {
    o.on_progress = [&](const Progress& pr) {
      const std::string best =
          pr.best_value ? fmt::format("{} {}", format_value(*pr.best_value), p.kernel->unit()) : "-";
      std::fprintf(stderr, "\r\033[Ktrial %lld/%lld  best %s  elapsed %s  ETA %s", static_cast<long long>(pr.done),
                   static_cast<long long>(pr.planned), best.c_str(), format_seconds(pr.elapsed_seconds).c_str(),
                   format_seconds(pr.eta_seconds).c_str());
      std::fflush(stderr);
    };
  }
  o.on_warning = [&](const std::string& w) {
    std::fprintf(stderr, "%sacceltune: warning: %s\n", tty ? "\r\033[K" : "", w.c_str());
  };

  if (tty) {
    std::fprintf(stderr, "acceltune: space %s (%llu valid configs), kernel %s, strategy %s, budget %lld%s, sizes %s\n",
                 p.space.name().c_str(), static_cast<unsigned long long>(p.space.count_valid()),
                 p.space.kernel().c_str(), o.strategy.c_str(), static_cast<long long>(o.budget),
                 o.time_limit_seconds > 0 ? fmt::format(", time limit {}", format_seconds(o.time_limit_seconds)).c_str()
                                          : "",
                 [&] {
                   std::string s;
                   for (uint64_t b : p.workload.sizes) s += (s.empty() ? "" : ",") + format_bytes(b);
                   return s;
                 }()
                     .c_str());
  }
  auto outcome = run_study(p.space, *p.kernel, **store, p.workload, o, probe_fingerprint());
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!outcome) return fail(outcome.error());
  const BestTable& b = outcome->best;
  double cost = 0;
  for (const auto& t : outcome->trials) cost += t.cost_seconds;
  std::printf("acceltune search: space %s, strategy %s, %lld trials (%lld ok%s), %s measuring; %s\n",
              p.space.name().c_str(), o.strategy.c_str(), static_cast<long long>(b.trials),
              static_cast<long long>(b.trials_ok),
              outcome->resumed_trials ? fmt::format(", {} resumed", outcome->resumed_trials).c_str() : "",
              format_seconds(cost).c_str(), outcome->stop_reason.c_str());
  print_best_table(b, p.space.definition(), stdout);
  std::printf("study: %s\n", out.string().c_str());
  if (b.trials_ok == 0) {
    std::fprintf(stderr, "acceltune: no trial measured ok; see the errors in %s/trials.jsonl\n", out.c_str());
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------- bench
int cmd_bench(const std::string& space_arg, const std::vector<std::string>& sets, const std::string& sizes,
              double target, double max_seconds, bool as_json) {
  auto prep = prepare(space_arg, sizes);
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
  const Trial trial = runner.run(c, 0, p.workload.sizes);
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

// ------------------------------------------------------------------------- best and export
struct LoadedStudy {
  Json study;
  BestTable best;
};

Expected<LoadedStudy> load_study(const std::string& dir) {
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<ResultStore> store, open_store("dir", dir));
  if (!store->has_study()) return input_error("{}: not a study directory (no study.json)", dir);
  ACCELTUNE_TRY_ASSIGN(Json study, store->read_study());
  auto best_json = store->read_best();
  if (best_json) {
    ACCELTUNE_TRY_ASSIGN(BestTable b, BestTable::from_json(*best_json));
    return LoadedStudy{std::move(study), std::move(b)};
  }
  // The study stopped before writing best.json (killed): rebuild the table from its trials.
  std::fprintf(stderr, "acceltune: %s has no best.json yet; computing it from trials.jsonl\n", dir.c_str());
  ACCELTUNE_TRY_ASSIGN(Space space, Space::from_json(study["space"], dir + "/study.json", dir));
  ACCELTUNE_TRY_ASSIGN(Workload w, Workload::from_json(study["workload"]));
  int torn = 0;
  ACCELTUNE_TRY_ASSIGN(std::vector<Trial> trials, load_trials(*store, space, &torn));
  const std::string unit = space.kernel() == "replay" ? space.extra().value("unit", "objective") : "GB/s";
  return LoadedStudy{std::move(study), compute_best(space, w, trials, unit)};
}

int cmd_best(const std::string& dir, bool as_json) {
  auto s = load_study(dir);
  if (!s) return fail(s.error());
  if (as_json) {
    std::printf("%s\n", s->best.to_json().dump(2).c_str());
    return 0;
  }
  std::printf("study %s: space %s, %lld trials (%lld ok)\n", dir.c_str(), s->best.space.c_str(),
              static_cast<long long>(s->best.trials), static_cast<long long>(s->best.trials_ok));
  print_best_table(s->best, s->study.value("space", Json::object()), stdout);
  return 0;
}

int cmd_export(const std::string& dir, const std::string& format, const std::string& out_file) {
  auto s = load_study(dir);
  if (!s) return fail(s.error());
  auto text = emit(format, s->best);
  if (!text) return fail(text.error());
  if (out_file.empty() || out_file == "-") {
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
  }
  const std::string tmp = out_file + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return fail(input_error("{}: cannot write the export: {}", out_file, std::strerror(errno)));
    f << *text;
    if (!f.flush()) return fail(runtime_error("{}: write failed", out_file));
  }
  if (std::rename(tmp.c_str(), out_file.c_str()) != 0) {
    return fail(runtime_error("{}: cannot write the export: {}", out_file, std::strerror(errno)));
  }
  return 0;
}

// ----------------------------------------------------------------------------------- exec
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
}  // namespace acceltune::cli

int main(int argc, char** argv) {
  using namespace acceltune::cli;
  CLI::App app{"acceltune: autotuning of accelerator and network communication parameters.\n"
               "Measures real transfers under many settings, searches the space, and writes the best\n"
               "configuration per message size in formats the libraries read.",
               "acceltune"};
  app.require_subcommand(1);
  app.set_version_flag("--version", acceltune::acceltune_version());
  app.footer("Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad input.\n"
             "Run 'acceltune COMMAND --help' for the options of a command.");

  bool probe_json = false;
  auto* probe = app.add_subcommand("probe", "print the hardware and software fingerprint");
  probe->add_flag("--json", probe_json, "print JSON (as stored in every study)");

  auto* spaces = app.add_subcommand("spaces", "list the shipped spaces, one line each");

  SearchArgs sa;
  auto* search = app.add_subcommand("search", "search a space and write the best config per message size");
  search->add_option("--space", sa.space,
                     "a shipped space's name, or a space file (.json, or .csv as a replay landscape); "
                     "default: host-copy");
  search->add_option("--strategy", sa.strategy,
                     "grid, random, local, bayes, halving or halving-bayes; default: the space's choice, else grid "
                     "when the budget covers the space, else random");
  search->add_option("--budget", sa.budget, "trials in the study, resumed ones included (default: the space's, else 50)")
      ->check(CLI::PositiveNumber);
  search->add_option("--time-limit", sa.time_limit, "stop starting trials after this many seconds")
      ->check(CLI::NonNegativeNumber);
  search->add_option("--sizes", sa.sizes, "message sizes, e.g. 64K,1M,16M or 1K:1G:x4 (default: the space's)");
  auto* seed_opt = search->add_option("--seed", sa.seed, "random seed, stored with the study (default 1)");
  search->add_option("--out", sa.out, "study directory (default: a new one under ./acceltune-results/)");
  search->add_flag("--resume", sa.resume,
                   "continue the study in --out (default: the newest study of this space) without repeating a trial");
  search->add_option("--target", sa.target, "relative half-width of the median's 95% interval to reach (default 0.02)")
      ->check(CLI::Range(0.0001, 1.0));
  search->add_option("--max-seconds", sa.max_seconds, "measurement time cap per config and size (default 0.5)")
      ->check(CLI::Range(0.001, 3600.0));
  search->add_option("--isolation", sa.isolation,
                     "auto, in-process or worker (a fresh process per trial, with a watchdog); auto: workers when "
                     "the kernel or space needs them or a param is set through the environment");
  search->add_option("--trial-timeout", sa.trial_timeout,
                     "seconds before a worker's trial is killed and recorded as timeout (default: from --max-seconds)")
      ->check(CLI::NonNegativeNumber);
  search->add_option("--certify-top", sa.certify_top,
                     "top configs per size re-measured interleaved with the default after the search; 0: off (default 3)")
      ->check(CLI::Range(0, 100));
  search->add_option("--certify-rounds", sa.certify_rounds, "interleaved rounds of that re-measurement (default 5)")
      ->check(CLI::Range(2, 1000));
  search->add_option("--log-level", sa.log_level,
                     "console detail: error, warn (failed trials; default), info (every trial), debug (every event); "
                     "every event is also written to DIR/events.jsonl");
  search->footer("Example: acceltune search --space host-copy --budget 40 --sizes 64K,16M --out study1");

  std::string bench_space, bench_sizes;
  std::vector<std::string> bench_sets;
  double bench_target = 0.02, bench_max = 1.0;
  bool bench_json = false;
  auto* bench = app.add_subcommand("bench", "measure one config (the default, changed by --set)");
  bench->add_option("--space", bench_space, "a shipped space's name or a space file")->required();
  bench->add_option("--set", bench_sets, "PARAM=VALUE, repeatable");
  bench->add_option("--sizes", bench_sizes, "message sizes (default: the space's)");
  bench->add_option("--target", bench_target, "relative half-width of the median's 95% interval to reach")
      ->check(CLI::Range(0.0001, 1.0));
  bench->add_option("--max-seconds", bench_max, "measurement time cap per size (default 1)")
      ->check(CLI::Range(0.001, 3600.0));
  bench->add_flag("--json", bench_json, "print the measurements as JSON");
  bench->footer("Example: acceltune bench --space host-copy --set threads=2 --set chunk=1M --sizes 64M");

  std::string best_dir;
  bool best_json = false;
  auto* best = app.add_subcommand("best", "print the best-per-size table of a study");
  best->add_option("DIR", best_dir, "study directory")->required();
  best->add_flag("--json", best_json, "print best.json");

  std::string export_dir, export_format, export_out;
  auto* exp = app.add_subcommand("export", "write a study's best configuration in a library's format");
  exp->add_option("DIR", export_dir, "study directory")->required();
  exp->add_option("--format", export_format, "json or env")->required();
  exp->add_option("-o,--output", export_out, "file to write (default: standard output)");

  std::string exec_config;
  std::vector<std::string> exec_cmd;
  bool exec_verbose = false;
  auto* ex = app.add_subcommand("exec", "run a command with the best config's environment variables set");
  ex->add_option("--config", exec_config, "a study directory, its best.json, or an env file (KEY=VALUE lines)")
      ->required();
  ex->add_flag("-v,--verbose", exec_verbose, "print each variable set");
  ex->add_option("command", exec_cmd, "the command and its arguments, after '--'")->required();
  ex->footer("Example: acceltune exec --config acceltune-results/nccl-1 -- ./train.sh");

  // The hidden worker mode: one trial's measurements, request on stdin, result on fd 3.
  if (argc == 2 && std::string(argv[1]) == "__worker") return acceltune::worker_main(0, 3);

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

  if (*probe) return cmd_probe(probe_json);
  if (*spaces) return cmd_spaces();
  if (*search) {
    sa.seed_given = seed_opt->count() > 0;
    return cmd_search(sa);
  }
  if (*bench) return cmd_bench(bench_space, bench_sets, bench_sizes, bench_target, bench_max, bench_json);
  if (*best) return cmd_best(best_dir, best_json);
  if (*exp) return cmd_export(export_dir, export_format, export_out);
  if (*ex) return cmd_exec(exec_config, exec_cmd, exec_verbose);
  return 2;
}
