// The study loop: ask the strategy, measure every size, store the trial durably, tell the
// strategy; trial 0 is always the library default; resume replays the stored trials.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tuner/best.hpp"
#include "tuner/certify.hpp"
#include "tuner/kernel.hpp"
#include "tuner/runner.hpp"
#include "tuner/store.hpp"
#include "tuner/strategy.hpp"

namespace acceltune {

struct Progress {
  int64_t done = 0;      // trials finished, resumed ones included
  int64_t planned = 0;   // the budget, or the number of valid configs if smaller
  std::optional<double> best_value;
  double elapsed_seconds = 0;
  double eta_seconds = 0;
  const Trial* last = nullptr;
};

struct StudyOptions {
  std::string strategy = "random";
  uint64_t seed = 1;
  int64_t budget = 50;              // total trials of the study, resumed ones included
  double time_limit_seconds = 0;    // for this invocation; 0: none
  MeasureSettings measure;
  bool resume = false;
  Isolation isolation = Isolation::automatic;
  std::vector<std::string> worker_command;  // argv of the hidden worker mode
  double trial_timeout_seconds = 0;         // 0: derived from the measurement settings
  CertifyOptions certify;
  TelemetryOptions telemetry;  // samples around each trial, the thermal guard
  std::function<void(const Progress&)> on_progress;
  std::function<void(const std::string&)> on_warning;
  // Every structured event as it is logged (the console shows them by --log-level).
  std::function<void(const Json&)> on_event;
  std::function<void(int done, int total)> on_certify_progress;
};

struct StudyOutcome {
  std::vector<Trial> trials;
  BestTable best;
  int64_t resumed_trials = 0;
  std::string stop_reason;
  Isolation isolation = Isolation::in_process;
  // The signal that cancelled the study (cancel.hpp), 0 when it ran to its end. A cancelled
  // study keeps every finished trial, drops the one in flight and is not certified.
  int cancelled_by = 0;
};

Json make_study_record(const Space& space, const Workload& workload, const StudyOptions& options,
                       const Json& fingerprint);

// Where two JSON values first differ ("params[1].values[3]: 8 vs 16"); empty when equal.
std::string first_difference(const Json& a, const Json& b, const std::string& path = "");

Expected<StudyOutcome> run_study(const Space& space, Kernel& kernel, ResultStore& store,
                                 const Workload& workload, const StudyOptions& options,
                                 const Json& fingerprint);

// Reads the trials of a stored study with its space (for `best`, `export`).
Expected<std::vector<Trial>> load_trials(const ResultStore& store, const Space& space, int* torn);

// How a search ended, kept in its study folder (outcome.json) for whoever started it: bring-up
// reads why a study failed from here rather than from the search's stderr.
struct SearchOutcome {
  std::string state;  // "done", "failed" or "cancelled"
  std::string why;    // the error that ended it; empty when done
  int exit_code = 0;
};
Status write_search_outcome(const std::string& dir, const SearchOutcome& outcome);
// The outcome a search left in `dir`; nullopt when it left none (it crashed, or predates them).
std::optional<SearchOutcome> read_search_outcome(const std::string& dir);

}  // namespace acceltune
