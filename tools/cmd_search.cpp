// acceltune search: search a space and write the best config per message size.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tools/bringup/families.hpp"
#include "tools/cli.hpp"
#include "tuner/cancel.hpp"
#include "tuner/delivery.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/process_guard.hpp"
#include "tuner/study.hpp"
#include "tuner/verify.hpp"

namespace acceltune::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

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
  int verify_rounds = 5;  // delivered rounds after the search; 0: off
  int verify_max_rounds = 24;
  int64_t budget = 0;
  int ranks = 0;
  double time_limit = 0;
  uint64_t seed = 1;
  bool seed_given = false;
  bool resume = false;
  PlacementArgs placement;
  double target = 0.02;
  double max_seconds = 0.5;
  bool no_telemetry = false;
  double thermal_limit = 85;
  double thermal_wait = 120;
};

// A search without --space, --time-limit or --budget: about a minute, all stages.
constexpr double kDefaultSearchSeconds = 60;

// The study folder once known: its outcome.json says how this search ended (bring-up reads it).
fs::path outcome_dir;

// The study folder: --out, else the newest study of the space (--resume) or a fresh one.
Expected<fs::path> study_dir_of(const SearchArgs& a, const std::string& space_name) {
  if (!a.out.empty()) return fs::path(a.out);
  if (!a.resume) return fresh_study_dir(space_name);
  auto newest = newest_study_dir(space_name);
  if (!newest) {
    return input_error("no study of space '{}' under {}/ to resume; pass --out DIR", space_name, kResultsRoot);
  }
  return *newest;
}

// The command's time limit (--time-limit, else the space's; 0: none) and how it is shared: the
// search 40%, certification 20%, the delivered measurement 40% (its plain clients start a job per
// run), and a stage that ends early leaves its time to the next; without certification or delivery
// the search gets their share.
struct TimeLimit {
  Deadline search_end, certify_end, end;
};

TimeLimit time_limit_of(const SearchArgs& a, const Prepared& p, Clock::time_point started) {
  TimeLimit t;
  const double seconds = a.time_limit > 0 ? a.time_limit : search_defaults(p.space).value("time_limit_seconds", 0.0);
  if (seconds <= 0) return t;
  const double certify = a.certify_top > 0 && a.certify_rounds > 0 ? kCertifyShare : 0.0;
  const double deliver =
      a.verify_rounds > 0 && DeliveryRegistry::instance().find(p.space.kernel()) != nullptr ? kDeliverShare : 0.0;
  const double search = 1.0 - certify - deliver;
  const auto at = [&](double fraction) {
    return started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds * fraction));
  };
  t.search_end = at(search);
  t.certify_end = at(search + certify);
  t.end = at(1.0);
  return t;
}

// The study's options from the command line, the space's defaults and (resumed) the stored study.
Expected<StudyOptions> options_of(const SearchArgs& a, const Prepared& p, ResultStore& store, const TimeLimit& limit) {
  const Json defaults = search_defaults(p.space);
  StudyOptions o;
  o.budget = a.budget > 0 ? a.budget : defaults.value("budget", int64_t{50});
  if (limit.search_end) {
    // The search's own clock starts when it does: what preparing took is already spent.
    o.time_limit_seconds = std::max(1e-9, std::chrono::duration<double>(*limit.search_end - Clock::now()).count());
  }
  o.seed = a.seed;
  o.strategy = a.strategy;
  if (a.resume && store.has_study()) {
    // A resumed study keeps its strategy and seed unless they are given (and then must match).
    ACCELTUNE_TRY_ASSIGN(Json stored, store.read_study());
    if (o.strategy.empty()) o.strategy = stored.value("strategy", "");
    if (!a.seed_given) o.seed = stored.value("seed", uint64_t{1});
  }
  if (o.strategy.empty()) {
    o.strategy = defaults.value("strategy", "");
    if (o.strategy.empty()) {
      o.strategy = p.space.count_valid() <= static_cast<uint64_t>(o.budget) ? "grid" : "bayes";
    }
  }
  o.resume = a.resume;
  o.measure.target_rel_halfwidth = a.target;
  o.measure.max_seconds = a.max_seconds;
  ACCELTUNE_TRY_ASSIGN(o.isolation, isolation_from_string(a.isolation));
  o.worker_command = worker_command();
  o.trial_timeout_seconds = a.trial_timeout;
  o.certify.top = a.certify_top;
  o.certify.rounds = a.certify_rounds;
  o.certify.deadline = limit.certify_end;
  o.telemetry.enabled = !a.no_telemetry;
  o.telemetry.thermal_limit_c = a.thermal_limit;
  o.telemetry.thermal_wait_max_seconds = a.thermal_wait;
  return o;
}

// What the study says while it runs: events at the log level, progress lines on a terminal.
Status add_reporting(StudyOptions& o, const SearchArgs& a, const Prepared& p, bool tty) {
  ACCELTUNE_TRY_ASSIGN(const LogLevel level, parse_log_level(a.log_level));
  const std::string unit = p.kernel->unit();
  o.on_event = [unit, tty, lv = level](const Json& e) {
    const std::string ev = e.value("event", "");
    std::string line;
    if (ev == "trial_failure" && lv >= LogLevel::warn) {
      line = fmt::format("trial {} {}: {}", e.value("number", 0), e.value("state", ""), e.value("error", ""));
    } else if (ev == "trial_finish" && lv >= LogLevel::info) {
      line = fmt::format("trial {} ok: {} {} in {:.2f} s", e.value("number", 0),
                         e["value"].is_number() ? format_value(e["value"].get<double>()) : "-", unit,
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
    o.on_progress = [unit](const Progress& pr) {
      const std::string best = pr.best_value ? fmt::format("{} {}", format_value(*pr.best_value), unit) : "-";
      std::fprintf(stderr, "\r\033[Ktrial %lld/%lld  best %s  elapsed %s  ETA %s", static_cast<long long>(pr.done),
                   static_cast<long long>(pr.planned), best.c_str(), format_seconds(pr.elapsed_seconds).c_str(),
                   format_seconds(pr.eta_seconds).c_str());
      std::fflush(stderr);
    };
  } else {
    // Off a terminal (a log, a pipe, a batch job): a plain line at each phase and at most every
    // 10 s within one, so a log shows life.
    struct Pace {
      std::string phase;
      std::chrono::steady_clock::time_point last;
      bool due(const std::string& now_phase) {
        const auto now = std::chrono::steady_clock::now();
        if (phase == now_phase && now - last < std::chrono::seconds(10)) return false;
        phase = now_phase;
        last = now;
        return true;
      }
    };
    auto pace = std::make_shared<Pace>();
    o.on_progress = [unit, pace](const Progress& pr) {
      if (!pace->due("search")) return;
      const std::string best = pr.best_value ? fmt::format("{} {}", format_value(*pr.best_value), unit) : "-";
      std::fprintf(stderr, "acceltune: searching: trial %lld/%lld, best %s, elapsed %s, about %s left\n",
                   static_cast<long long>(pr.done), static_cast<long long>(pr.planned), best.c_str(),
                   format_seconds(pr.elapsed_seconds).c_str(), format_seconds(pr.eta_seconds).c_str());
      std::fflush(stderr);
    };
    o.on_certify_progress = [pace](int done, int total) {
      if (!pace->due("certify") && done < total) return;
      std::fprintf(stderr, "acceltune: certifying gains against the default: %d/%d measurements\n", done, total);
      std::fflush(stderr);
    };
  }
  o.on_warning = [tty](const std::string& w) {
    std::fprintf(stderr, "%sacceltune: warning: %s\n", tty ? "\r\033[K" : "", w.c_str());
  };
  o.telemetry.on_note = [tty](const std::string& line) {
    std::fprintf(stderr, "%sacceltune: %s\n", tty ? "\r\033[K" : "", line.c_str());
  };
  {
    std::string sizes;
    for (uint64_t b : p.workload.sizes) sizes += (sizes.empty() ? "" : ",") + format_bytes(b);
    std::fprintf(stderr, "acceltune: space %s (%llu valid configs), kernel %s, strategy %s, budget %lld%s, sizes %s\n",
                 p.space.name().c_str(), static_cast<unsigned long long>(p.space.count_valid()),
                 p.space.kernel().c_str(), o.strategy.c_str(), static_cast<long long>(o.budget),
                 o.time_limit_seconds > 0
                     ? fmt::format(", searching for up to {} of the time limit", format_seconds(o.time_limit_seconds)).c_str()
                     : "",
                 sizes.c_str());
  }
  return {};
}

// Without --space: the study bring-up would run here whose result a job loads (tools/bringup/
// families.hpp), said on stderr, within a minute unless --time-limit or --budget says otherwise.
Json pick_default_space(SearchArgs& a, const Json& probe) {
  const bringup::DefaultSearch d = bringup::default_search(bringup::node_facts(probe, false));
  std::fprintf(stderr, "acceltune: %s\n", d.why.c_str());
  a.space = d.study.space;
  for (const auto& arg : d.study.args) {
    if (arg == "--netns" && a.placement.peer.empty()) a.placement.netns = true;
  }
  if (a.time_limit <= 0 && a.budget <= 0) a.time_limit = kDefaultSearchSeconds;
  return d.study.space_override;
}

int cmd_search(SearchArgs a) {
  const auto started = Clock::now();
  // Without --space the probe picks the space, and the study keeps that probe: the machine is probed once.
  std::optional<Json> probe;
  if (a.space.empty()) probe = probe_fingerprint();
  const Json space_fields = with_ranks(probe ? pick_default_space(a, *probe) : Json(nullptr), a.ranks);
  auto prep = prepare(a.space, a.sizes, a.placement, /*to_tune=*/true, space_fields);
  if (!prep) return fail(prep.error());
  Prepared& p = *prep;
  auto dir = study_dir_of(a, p.space.name());
  if (!dir) return fail(dir.error());
  const fs::path out = *dir;
  // Nothing to resume: refused before anything is written there (no folder, lock or outcome).
  std::error_code ec;
  if (a.resume && !fs::exists(out / "study.json", ec)) {
    return fail(input_error("{}: there is no study to resume here; run without --resume to start one", out.string()));
  }
  outcome_dir = out;
  auto store = open_store("dir", out.string());
  if (!store) return fail(store.error());
  const TimeLimit limit = time_limit_of(a, p, started);
  auto options = options_of(a, p, **store, limit);
  if (!options) return fail(options.error());
  StudyOptions& o = *options;
  const bool tty = stderr_is_terminal();
  if (Status st = add_reporting(o, a, p, tty); !st) return fail(st.error());

  // Ctrl-C or SIGTERM stops the study between samples and keeps its finished trials; whatever
  // the trials started (workers, mpirun, ranks) ends with this process, even on SIGKILL.
  install_cancel_handlers();
  auto guard = ProcessGuard::start();
  if (!guard) return fail(guard.error());
  auto outcome = run_study(p.space, *p.kernel, **store, p.workload, o, probe ? *probe : probe_fingerprint());
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
  // The delivered gain: the plan loaded by a plain job of the family, with its fallbacks. The table
  // is printed once, after it, so its figures are the plan's last.
  const bool out_of_time = deadline_passed(limit.end);
  const bool verifiable = a.verify_rounds > 0 && !outcome->cancelled_by && b.trials_ok > 0 &&
                          DeliveryRegistry::instance().find(b.kernel);
  BestTable shown = outcome->best;
  if (verifiable && !out_of_time) {
    // The kernel's own processes and namespaces end first: the plain client makes its own.
    p.kernel.reset();
    const int rc = verify_study(shown, a.verify_rounds, false, /*measurements=*/3, /*fall_back=*/true,
                                a.verify_max_rounds, limit.end, plan_b_choices(b, p.space, outcome->trials));
    if (shown.delivery.verdict == "fails") return rc;  // the plan broke the job: said, and exported no more
    if (rc != 0 && rc != kExitNoLongerPays && rc != kExitNotVerified) {
      std::fprintf(stderr, "acceltune: the delivered gain was not measured; 'acceltune verify %s' retries\n",
                   out.c_str());
    }
    std::printf("\n");
  }
  print_best_table(shown, p.space.definition(), stdout);
  print_efficiency(shown.study, shown, stdout);
  if (verifiable && out_of_time) {
    std::printf("delivered: not verified: the time limit left no time for it ('acceltune verify %s' measures it)\n",
                out.c_str());
  }
  std::printf("study: %s\n", out.string().c_str());
  if (outcome->cancelled_by) {
    std::fprintf(stderr, "acceltune: search cancelled by %s; 'acceltune search --resume --out %s' continues it\n",
                 signal_name(outcome->cancelled_by).c_str(), out.c_str());
    return 128 + outcome->cancelled_by;
  }
  if (b.trials_ok == 0) {
    return fail(runtime_error("no trial measured ok; see the errors in {}/trials.jsonl", out.string()));
  }
  return 0;
}


}  // namespace

void add_search_command(CLI::App& app, CommandList& list) {
  auto args = std::make_shared<SearchArgs>();
  SearchArgs& sa = *args;
  auto* search = app.add_subcommand("search", "search a space and write the best config per message size");
  search->add_option("--space", sa.space,
                     "a shipped space's name, or a space file (.json, or .csv as a replay landscape); default: the "
                     "first space bring-up tunes here whose result a job loads (said on stderr), for one minute "
                     "unless --time-limit or --budget is given");
  search->add_option("--strategy", sa.strategy,
                     "grid, random, local, coordinate, bayes, halving or halving-bayes; default: the space's choice, else grid "
                     "when the budget covers the space, else bayes");
  search->add_option("--budget", sa.budget, "trials in the study, resumed ones included (default: the space's, else 50)")
      ->check(CLI::PositiveNumber);
  add_duration_option(search, "--time-limit", sa.time_limit,
                      "the whole command's time: 40% searching, 20% certification, 40% the delivered measurement "
                      "(a stage that ends early leaves its time to the next); a plan the limit left undecided falls "
                      "back to the defaults, and the output says so",
                      {.zero_allowed = true});
  search->add_option("--sizes", sa.sizes, "message sizes, e.g. 64K,1M,16M or 1K:1G:x4 (default: the space's)");
  auto* seed_opt = search->add_option("--seed", sa.seed, "random seed, stored with the study (default 1)");
  search->add_option("--out", sa.out, "study directory (default: a new one under ./acceltune-results/)");
  search->add_flag("--resume", sa.resume,
                   "continue the study in --out (default: the newest study of this space) without repeating a trial");
  search->add_option("--target", sa.target, "relative half-width of the median's 95% interval to reach (default 0.02)")
      ->check(CLI::Range(0.0001, 1.0));
  add_duration_option(search, "--max-seconds", sa.max_seconds, "measurement time cap per config and size (default 0.5)",
                      {.min_seconds = 0.001, .max_seconds = 3600});
  search->add_option("--isolation", sa.isolation,
                     "auto, in-process or worker (a fresh process per trial, with a watchdog); auto: workers when "
                     "the kernel or space needs them or a param is set through the environment");
  add_duration_option(search, "--trial-timeout", sa.trial_timeout,
                      "how long a worker's trial runs before it is killed and recorded as timeout (default: from "
                      "--max-seconds)",
                      {.zero_allowed = true});
  search->add_option("--certify-top", sa.certify_top,
                     "top configs per size re-measured interleaved with the default after the search; 0: off (default 3)")
      ->check(CLI::Range(0, 100));
  search->add_option("--verify-rounds", sa.verify_rounds,
                     "after certification, rounds of the plan loaded by a plain job of the family (mpirun with the "
                     "rules and env files, ucx_perftest, acceltune-tcp-client) interleaved with the defaults, for the "
                     "delivered gain; the first decision after these, and a plan that does not ship falls back; 0: off "
                     "(default 5; acceltune verify DIR does it later)")
      ->check(CLI::Range(0, 1000));
  search->add_option("--verify-max-rounds", sa.verify_max_rounds,
                     "rounds the delivered measurement may go on to until the plan's verdict is decided; a plan "
                     "undecided by then does not ship (default 24)")
      ->check(CLI::Range(2, 1000));
  search->add_option("--certify-rounds", sa.certify_rounds, "interleaved rounds of that re-measurement (default 5)")
      ->check(CLI::Range(2, 1000));
  search->add_option("--log-level", sa.log_level,
                     "console detail: error, warn (failed trials; default), info (every trial), debug (every event); "
                     "every event is also written to DIR/events.jsonl");
  search->footer(
      "Examples: acceltune search   (picks a space whose result a job loads here, about a minute)\n"
      "          acceltune search --space mpi-allreduce --time-limit 2m --out study1\n"
      "          acceltune search --space host-copy --budget 40 --sizes 64K,16M   (the memory-path check)");
  search->add_flag("--no-telemetry", sa.no_telemetry,
                   "record no telemetry (CPU load and frequency, NIC bytes, GPU temperature, power and clocks) "
                   "around trials, and no thermal guard");
  search->add_option("--thermal-limit", sa.thermal_limit,
                     "before a trial, wait while a GPU is above this many degrees C, and mark trials measured above "
                     "it or while throttled; 0: off; acts only where GPU temperatures are readable (default 85)")
      ->check(CLI::Range(0.0, 200.0));
  add_duration_option(search, "--thermal-wait", sa.thermal_wait,
                      "the longest wait for a hot GPU before a trial; then it is measured and marked (default 2m)",
                      {.max_seconds = 3600, .zero_allowed = true});
  add_placement_options(search, sa.placement);
  add_ranks_option(search, sa.ranks);
  list.add(search, [args, seed_opt] {
    args->seed_given = seed_opt->count() > 0;
    const int rc = cmd_search(*args);
    if (!outcome_dir.empty()) {
      const std::string state = rc == 0 ? "done" : rc >= 128 ? "cancelled" : "failed";
      (void)write_search_outcome(outcome_dir.string(), SearchOutcome{state, rc == 0 ? "" : last_failure(), rc});
    }
    return rc;
  });
}

}  // namespace acceltune::cli
