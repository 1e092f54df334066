// The definitions behind tuner/study.hpp: the study loop.
#include "tuner/study.hpp"

#include "tuner/plan.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <algorithm>
#include <unordered_map>

#include "tuner/cancel.hpp"

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

Expected<StudyOutcome> run_study(const Space& space, Kernel& kernel, ResultStore& store,
                                 const Workload& workload, const StudyOptions& options,
                                 const Json& fingerprint) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  StudyOutcome out;
  Json record = make_study_record(space, workload, options, fingerprint);
  record["link"] = kernel.link();
  ACCELTUNE_TRY_ASSIGN(out.isolation, resolve_isolation(space, kernel, options.isolation));
  if (out.isolation == Isolation::worker && options.worker_command.empty()) {
    return input_error("space '{}' needs worker processes, but no worker command is set", space.name());
  }
  auto log = [&](Json event) {
    store.log(event);
    if (options.on_event) options.on_event(event);
  };
  ACCELTUNE_TRY(store.lock());

  if (options.resume) {
    if (!store.has_study()) {
      return input_error("{}: there is no study to resume here; run without --resume to start one",
                         store.location());
    }
    ACCELTUNE_TRY_ASSIGN(Json stored, store.read_study());
    auto refuse = [&](const std::string& what, const std::string& diff) {
      return input_error("{}: refusing to resume: the stored study has a different {} ({}); start a "
                         "new study with another --out",
                         store.location(), what, diff);
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
    int torn = 0;
    ACCELTUNE_TRY_ASSIGN(out.trials, load_trials(store, space, &torn));
    if (torn > 0 && options.on_warning) {
      options.on_warning(fmt::format("{}: ignored a torn last trial record (the previous run was "
                                     "interrupted while writing it)", store.location()));
    }
    out.resumed_trials = static_cast<int64_t>(out.trials.size());
  } else {
    if (store.has_study()) {
      return input_error("{}: a study is already stored here; pass --resume to continue it or choose "
                         "another --out",
                         store.location());
    }
    ACCELTUNE_TRY(store.create(record));
  }

  log(Json{{"event", options.resume ? "resume" : "start"},
           {"space", space.name()},
           {"strategy", options.strategy},
           {"seed", options.seed},
           {"budget", options.budget},
           {"isolation", std::string(to_string(out.isolation))},
           {"trials_kept", out.trials.size()}});
  RunnerOptions ro;
  ro.isolation = out.isolation;
  ro.worker_command = options.worker_command;
  ro.timeout_seconds = options.trial_timeout_seconds;
  ro.seed = options.seed;
  ro.measure = options.measure;
  ro.telemetry = options.telemetry;
  TrialRunner runner(space, kernel, ro);
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Strategy> strategy,
                       make_strategy(options.strategy, space, options.seed));
  std::unordered_map<std::string, double> seen;  // key -> the highest effort measured
  std::optional<double> best_value;
  int64_t next_number = 0;
  for (const auto& t : out.trials) {
    seen[t.key] = std::max(seen[t.key], t.effort);
    strategy->tell(t);
    if (t.value && (!best_value || *t.value > *best_value)) best_value = t.value;
    next_number = std::max(next_number, t.number + 1);
  }

  const int64_t valid = static_cast<int64_t>(std::min<uint64_t>(space.count_valid(), INT64_MAX));
  const int64_t planned = std::min(options.budget, valid);
  const Config default_config = space.default_config();
  double spent_seconds = 0;
  int64_t run_here = 0;
  int64_t skipped = 0;
  out.stop_reason = "budget reached";
  while (static_cast<int64_t>(out.trials.size()) < options.budget) {
    if (cancel_requested()) break;
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (options.time_limit_seconds > 0 && elapsed >= options.time_limit_seconds) {
      out.stop_reason = "time limit reached";
      break;
    }
    std::optional<Config> next;
    double effort = 1.0;
    const std::string default_key = space.key(default_config);
    if (!seen.count(default_key)) {
      next = default_config;  // the reference every gain is measured against
    } else {
      next = strategy->ask();
      effort = std::clamp(strategy->effort(), 1e-3, 1.0);
    }
    if (!next) {
      out.stop_reason = "every valid config was measured";
      break;
    }
    const std::string key = space.key(*next);
    const auto was = seen.find(key);
    if ((was != seen.end() && was->second >= effort) || !space.is_valid(*next)) {
      // A strategy that repeats or proposes an invalid config is a bug; survive it.
      if (++skipped > 1000) {
        out.stop_reason = "the strategy proposed no new valid config";
        break;
      }
      continue;
    }
    const int64_t number = next_number++;
    log(Json{{"event", "trial_start"}, {"number", number}, {"config", space.config_to_json(*next)}, {"effort", effort}});
    const std::string started_at = utc_now_iso8601();
    Trial t = runner.run(*next, number, workload.sizes, effort);
    if (cancel_requested()) {
      // Cut short: not a result. Not stored, so --resume measures this config again.
      log(Json{{"event", "trial_cancelled"}, {"number", number}});
      break;
    }
    t.started_at = started_at;
    ACCELTUNE_TRY(store.append(t.to_json(space)));
    Json fin{{"event", t.state == State::ok ? "trial_finish" : "trial_failure"},
             {"number", t.number},
             {"state", std::string(to_string(t.state))},
             {"value", t.value ? Json(*t.value) : Json(nullptr)},
             {"cost_seconds", t.cost_seconds}};
    if (!t.error.empty()) fin["error"] = t.error;
    log(fin);
    seen[key] = std::max(seen[key], effort);
    strategy->tell(t);
    if (t.value && (!best_value || *t.value > *best_value)) best_value = t.value;
    spent_seconds += t.cost_seconds;
    ++run_here;
    out.trials.push_back(std::move(t));
    if (options.on_progress) {
      Progress p;
      p.done = static_cast<int64_t>(out.trials.size());
      p.planned = planned;
      p.best_value = best_value;
      p.elapsed_seconds = std::chrono::duration<double>(clock::now() - start).count();
      const double per_trial = spent_seconds / static_cast<double>(run_here);
      p.eta_seconds = per_trial * static_cast<double>(std::max<int64_t>(0, planned - p.done));
      if (options.time_limit_seconds > 0) {
        p.eta_seconds = std::min(p.eta_seconds, std::max(0.0, options.time_limit_seconds - p.elapsed_seconds));
      }
      p.last = &out.trials.back();
      options.on_progress(p);
    }
  }
  if (static_cast<int64_t>(seen.size()) >= valid && out.stop_reason == "budget reached") {
    out.stop_reason = "every valid config was measured";
  }
  if (cancel_requested()) {
    out.cancelled_by = cancel_signal();
    out.stop_reason = fmt::format("cancelled by {}; --resume continues", signal_name(out.cancelled_by));
  }

  // Noise-aware: the recommended config per size is the best posterior mean among the measured
  // ones, and certification re-measures the top of that order.
  Ranking ranking;
  out.best = compute_recommended_best(space, workload, out.trials, kernel.unit(), options.seed, &ranking);
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
  ACCELTUNE_TRY(store.write_best(out.best.to_json()));
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
