// The definitions behind tuner/study.hpp: the study loop.
#include "tuner/study.hpp"

#include "tuner/plan.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <algorithm>
#include <unordered_map>

#include "tuner/atomic_file.hpp"
#include "tuner/cancel.hpp"
#include "tuner/regular_file.hpp"

#ifndef ACCELTUNE_VERSION
#define ACCELTUNE_VERSION "0.0.0"
#endif

namespace acceltune {

Json make_study_record(const Space& space, const Workload& workload, const StudyOptions& options,
                       const Json& fingerprint) {
  Json s = Json::object();
  s["format"] = "acceltune-study/1";
  s["acceltune_version"] = ACCELTUNE_VERSION;
  s["created_at"] = utc_now_iso8601();
  s["space"] = space.definition();
  s["workload"] = workload.to_json();
  s["strategy"] = options.strategy;
  s["seed"] = options.seed;
  s["measure"] = options.measure.to_json();
  s["fingerprint"] = fingerprint;
  return s;
}

std::string first_difference(const Json& a, const Json& b, const std::string& path) {
  const std::string here = path.empty() ? "(top)" : path;
  if (a.type() != b.type() && !(a.is_number() && b.is_number())) {
    return fmt::format("{}: {} vs {}", here, a.dump(), b.dump());
  }
  if (a.is_object()) {
    for (const auto& [k, v] : a.items()) {
      const std::string p = path.empty() ? k : path + "." + k;
      if (!b.contains(k)) return fmt::format("{}: present vs absent", p);
      std::string d = first_difference(v, b[k], p);
      if (!d.empty()) return d;
    }
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) return fmt::format("{}: absent vs present", path.empty() ? k : path + "." + k);
    }
    return "";
  }
  if (a.is_array()) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      std::string d = first_difference(a[i], b[i], fmt::format("{}[{}]", path, i));
      if (!d.empty()) return d;
    }
    if (a.size() != b.size()) return fmt::format("{}: {} entries vs {}", here, a.size(), b.size());
    return "";
  }
  if (a != b) {
    auto shorten = [](const Json& j) {
      std::string s = j.dump();
      return s.size() > 60 ? s.substr(0, 57) + "..." : s;
    };
    return fmt::format("{}: {} vs {}", here, shorten(a), shorten(b));
  }
  return "";
}

Expected<std::vector<Trial>> load_trials(const ResultStore& store, const Space& space, int* torn) {
  ACCELTUNE_TRY_ASSIGN(std::vector<Json> records, store.read_trials(torn));
  std::vector<Trial> trials;
  trials.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    auto t = Trial::from_json(records[i], space);
    if (!t) {
      return input_error("{}: trial record {} does not fit the study's space: {}", store.location(), i + 1,
                         t.error().message);
    }
    trials.push_back(std::move(t).value());
  }
  return trials;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A stored study is resumed only as the same study: its space, workload, strategy and seed.
Status check_resumable(const Json& stored, const Json& record, const StudyOptions& options,
                       const std::string& location) {
  auto refuse = [&](const std::string& what, const std::string& diff) {
    return input_error("{}: refusing to resume: the stored study has a different {} ({}); start a "
                       "new study with another --out",
                       location, what, diff);
  };
  std::string d = first_difference(stored.value("space", Json()), record["space"]);
  if (!d.empty()) return refuse("space", d);
  d = first_difference(stored.value("workload", Json()), record["workload"]);
  if (!d.empty()) return refuse("workload", d);
  if (stored.value("strategy", "") != options.strategy) {
    return refuse("strategy", fmt::format("stored '{}', asked '{}'; pass --strategy {}",
                                          stored.value("strategy", ""), options.strategy,
                                          stored.value("strategy", "")));
  }
  if (stored.value("seed", uint64_t{0}) != options.seed) {
    return refuse("seed", fmt::format("stored {}, asked {}; pass --seed {}", stored.value("seed", uint64_t{0}),
                                      options.seed, stored.value("seed", uint64_t{0})));
  }
  return {};
}

// The stored trials of the study to resume, or the new study created: never one over the other.
Status open_study(ResultStore& store, const Space& space, const StudyOptions& options, const Json& record,
                  StudyOutcome& out) {
  if (!options.resume) {
    if (store.has_study()) {
      return input_error("{}: a study is already stored here; pass --resume to continue it or choose "
                         "another --out",
                         store.location());
    }
    return store.create(record);
  }
  if (!store.has_study()) {
    return input_error("{}: there is no study to resume here; run without --resume to start one",
                       store.location());
  }
  ACCELTUNE_TRY_ASSIGN(Json stored, store.read_study());
  ACCELTUNE_TRY(check_resumable(stored, record, options, store.location()));
  int torn = 0;
  ACCELTUNE_TRY_ASSIGN(out.trials, load_trials(store, space, &torn));
  if (torn > 0 && options.on_warning) {
    options.on_warning(fmt::format("{}: ignored a torn last trial record (the previous run was "
                                   "interrupted while writing it)", store.location()));
  }
  out.resumed_trials = static_cast<int64_t>(out.trials.size());
  return {};
}

RunnerOptions runner_options(const StudyOptions& options, Isolation isolation) {
  RunnerOptions ro;
  ro.isolation = isolation;
  ro.worker_command = options.worker_command;
  ro.timeout_seconds = options.trial_timeout_seconds;
  ro.seed = options.seed;
  ro.measure = options.measure;
  ro.telemetry = options.telemetry;
  return ro;
}

// The ask/tell loop: the default first, then the strategy's configs, each stored as it finishes,
// until the budget, the time limit, the space or a signal ends it (out.stop_reason says which).
class SearchLoop {
 public:
  SearchLoop(const Space& space, const Workload& workload, const StudyOptions& options, ResultStore& store,
             TrialRunner& runner, Strategy& strategy, const std::function<void(const Json&)>& log,
             Clock::time_point start, StudyOutcome& out)
      : space_(space), workload_(workload), options_(options), store_(store), runner_(runner),
        strategy_(strategy), log_(log), start_(start), out_(out),
        valid_(static_cast<int64_t>(std::min<uint64_t>(space.count_valid(), INT64_MAX))),
        planned_(std::min(options.budget, valid_)), default_config_(space.default_config()) {
    for (const auto& t : out_.trials) {
      learn(t, t.key, t.effort);
      next_number_ = std::max(next_number_, t.number + 1);
    }
  }

  Status run() {
    int64_t skipped = 0;
    out_.stop_reason = "budget reached";
    while (static_cast<int64_t>(out_.trials.size()) < options_.budget) {
      if (cancel_requested()) break;
      if (options_.time_limit_seconds > 0 && seconds_since(start_) >= options_.time_limit_seconds) {
        out_.stop_reason = "time limit reached";
        break;
      }
      double effort = 1.0;
      const std::optional<Config> next = propose(effort);
      if (!next) {
        out_.stop_reason = "every valid config was measured";
        break;
      }
      const std::string key = space_.key(*next);
      const auto was = seen_.find(key);
      if ((was != seen_.end() && was->second >= effort) || !space_.is_valid(*next)) {
        // A strategy that repeats or proposes an invalid config is a bug; survive it.
        if (++skipped > 1000) {
          out_.stop_reason = "the strategy proposed no new valid config";
          break;
        }
        continue;
      }
      const int64_t number = next_number_++;
      log_(Json{{"event", "trial_start"}, {"number", number}, {"config", space_.config_to_json(*next)}, {"effort", effort}});
      const std::string started_at = utc_now_iso8601();
      Trial t = runner_.run(*next, number, workload_.sizes, effort);
      if (cancel_requested()) {
        // Cut short: not a result. Not stored, so --resume measures this config again.
        log_(Json{{"event", "trial_cancelled"}, {"number", number}});
        break;
      }
      t.started_at = started_at;
      ACCELTUNE_TRY(store_.append(t.to_json(space_)));
      log_finish(t);
      learn(t, key, effort);
      spent_seconds_ += t.cost_seconds;
      ++run_here_;
      out_.trials.push_back(std::move(t));
      report_progress();
    }
    if (static_cast<int64_t>(seen_.size()) >= valid_ && out_.stop_reason == "budget reached") {
      out_.stop_reason = "every valid config was measured";
    }
    return {};
  }

 private:
  // The default until it is measured (the reference every gain is measured against), then the
  // strategy's next config at its effort; empty when the strategy has nothing left.
  std::optional<Config> propose(double& effort) {
    if (!seen_.count(space_.key(default_config_))) return default_config_;
    std::optional<Config> next = strategy_.ask();
    effort = std::clamp(strategy_.effort(), 1e-3, 1.0);
    return next;
  }

  void learn(const Trial& t, const std::string& key, double effort) {
    seen_[key] = std::max(seen_[key], effort);
    strategy_.tell(t);
    if (t.value && (!best_value_ || *t.value > *best_value_)) best_value_ = t.value;
  }

  void log_finish(const Trial& t) {
    Json fin{{"event", t.state == State::ok ? "trial_finish" : "trial_failure"},
             {"number", t.number},
             {"state", std::string(to_string(t.state))},
             {"value", t.value ? Json(*t.value) : Json(nullptr)},
             {"cost_seconds", t.cost_seconds}};
    if (!t.error.empty()) fin["error"] = t.error;
    log_(fin);
  }

  void report_progress() {
    if (!options_.on_progress) return;
    Progress p;
    p.done = static_cast<int64_t>(out_.trials.size());
    p.planned = planned_;
    p.best_value = best_value_;
    p.elapsed_seconds = seconds_since(start_);
    const double per_trial = spent_seconds_ / static_cast<double>(run_here_);
    p.eta_seconds = per_trial * static_cast<double>(std::max<int64_t>(0, planned_ - p.done));
    if (options_.time_limit_seconds > 0) {
      p.eta_seconds = std::min(p.eta_seconds, std::max(0.0, options_.time_limit_seconds - p.elapsed_seconds));
    }
    p.last = &out_.trials.back();
    options_.on_progress(p);
  }

  const Space& space_;
  const Workload& workload_;
  const StudyOptions& options_;
  ResultStore& store_;
  TrialRunner& runner_;
  Strategy& strategy_;
  const std::function<void(const Json&)>& log_;
  const Clock::time_point start_;
  StudyOutcome& out_;
  const int64_t valid_, planned_;
  const Config default_config_;
  std::unordered_map<std::string, double> seen_;  // key -> the highest effort measured
  std::optional<double> best_value_;
  int64_t next_number_ = 0;
  double spent_seconds_ = 0;
  int64_t run_here_ = 0;
};

// Noise-aware: the recommended config per size is the best posterior mean among the measured
// ones, and certification re-measures the top of that order. The table is written with its plan.
Status recommend_and_certify(const Space& space, const Workload& workload, const StudyOptions& options,
                             const std::string& unit, ResultStore& store, TrialRunner& runner,
                             const std::function<void(const Json&)>& log, const Json& record, StudyOutcome& out) {
  Ranking ranking;
  out.best = compute_recommended_best(space, workload, out.trials, unit, options.seed, &ranking);
  if (options.certify.top > 0 && out.best.trials_ok > 0 && !out.cancelled_by) {
    certify(out.best, space, out.trials, runner, options.certify, log, options.on_certify_progress, &ranking);
    if (cancel_requested()) {
      out.cancelled_by = cancel_signal();
      out.stop_reason = fmt::format("cancelled by {} while certifying; the table is not certified",
                                    signal_name(out.cancelled_by));
    }
  }
  out.best.study = record;
  out.best.dir = store.location();
  if (Status st = write_plan_files(out.best); !st && options.on_warning) {
    options.on_warning(fmt::format("the plan's per-size files were not written: {}", st.error().message));
  }
  return store.write_best(out.best.to_json());
}

}  // namespace

Expected<StudyOutcome> run_study(const Space& space, Kernel& kernel, ResultStore& store,
                                 const Workload& workload, const StudyOptions& options,
                                 const Json& fingerprint) {
  const auto start = Clock::now();
  StudyOutcome out;
  Json record = make_study_record(space, workload, options, fingerprint);
  record["link"] = kernel.link();
  ACCELTUNE_TRY_ASSIGN(out.isolation, resolve_isolation(space, kernel, options.isolation));
  if (out.isolation == Isolation::worker && options.worker_command.empty()) {
    return input_error("space '{}' needs worker processes, but no worker command is set", space.name());
  }
  const std::function<void(const Json&)> log = [&](const Json& event) {
    store.log(event);
    if (options.on_event) options.on_event(event);
  };
  ACCELTUNE_TRY(store.lock());
  ACCELTUNE_TRY(open_study(store, space, options, record, out));
  log(Json{{"event", options.resume ? "resume" : "start"},
           {"space", space.name()},
           {"strategy", options.strategy},
           {"seed", options.seed},
           {"budget", options.budget},
           {"isolation", std::string(to_string(out.isolation))},
           {"trials_kept", out.trials.size()}});
  TrialRunner runner(space, kernel, runner_options(options, out.isolation));
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Strategy> strategy,
                       make_strategy(options.strategy, space, options.seed));
  ACCELTUNE_TRY(SearchLoop(space, workload, options, store, runner, *strategy, log, start, out).run());
  if (cancel_requested()) {
    out.cancelled_by = cancel_signal();
    out.stop_reason = fmt::format("cancelled by {}; --resume continues", signal_name(out.cancelled_by));
  }
  ACCELTUNE_TRY(recommend_and_certify(space, workload, options, kernel.unit(), store, runner, log, record, out));
  log(Json{{"event", "end"}, {"reason", out.stop_reason}, {"trials", out.trials.size()}, {"certified", out.best.certified}});
  return out;
}

Expected<std::unique_ptr<ResultStore>> open_store(const std::string& kind, const std::string& location) {
  const StoreInfo* info = StoreRegistry::instance().find(kind);
  if (!info) {
    return input_error("unknown result store '{}' (this build has: {})", kind,
                       join_names(StoreRegistry::instance().names()));
  }
  return info->open(location);
}

}  // namespace acceltune

namespace acceltune {

Status write_search_outcome(const std::string& dir, const SearchOutcome& outcome) {
  const Json j{{"schema", 1}, {"state", outcome.state}, {"why", outcome.why}, {"exit_code", outcome.exit_code}};
  return write_file_atomically(std::filesystem::path(dir) / "outcome.json", j.dump(2) + "\n");
}

std::optional<SearchOutcome> read_search_outcome(const std::string& dir) {
  std::string text, why;
  const std::string path = (std::filesystem::path(dir) / "outcome.json").string();
  if (!read_regular_file(path.c_str(), text, why)) return std::nullopt;
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string()) return std::nullopt;
  SearchOutcome o;
  o.state = j["state"].get<std::string>();
  o.why = j.contains("why") && j["why"].is_string() ? j["why"].get<std::string>() : "";
  o.exit_code = j.contains("exit_code") && j["exit_code"].is_number_integer() ? j["exit_code"].get<int>() : 0;
  return o;
}

}  // namespace acceltune
