// The trial runner: measures one config at a list of sizes, in this process or in a fresh
// worker process (the same binary in a hidden worker mode) with the trial's environment set.
// The parent keeps a watchdog: a worker that outlives its timeout has its whole process group
// killed; a crash, a non-zero exit or a NaN is recorded as data, and the study goes on.
#pragma once

#include <string>
#include <vector>

#include <memory>

#include "tuner/kernel.hpp"
#include "tuner/telemetry.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

enum class Isolation { automatic, in_process, worker };
std::string_view to_string(Isolation i);
Expected<Isolation> isolation_from_string(std::string_view s);

struct RunnerOptions {
  Isolation isolation = Isolation::automatic;
  // argv of the worker: the acceltune binary and its hidden worker command.
  std::vector<std::string> worker_command;
  // Per-trial watchdog in seconds; 0: derived from the measurement settings and sizes.
  double timeout_seconds = 0;
  uint64_t seed = 1;
  MeasureSettings measure;
  // Samples around each trial and the thermal guard before it (telemetry.hpp).
  TelemetryOptions telemetry;
};

// The mode a space's trials run in. Kernels may require a worker (the fault kernel), a space
// may force one ("isolation" field), and a space with env-bound params runs in workers because
// libraries read most environment variables once per process.
Expected<Isolation> resolve_isolation(const Space& space, const Kernel& kernel, Isolation asked);

// The watchdog timeout a trial gets when none is given: generous next to the measurement cap.
double default_trial_timeout(const MeasureSettings& m, const std::vector<uint64_t>& sizes);

class TrialRunner {
 public:
  TrialRunner(const Space& space, Kernel& kernel, RunnerOptions options);
  Isolation isolation() const { return isolation_; }
  double timeout_seconds(const std::vector<uint64_t>& sizes) const;
  // Measures `config` at `sizes`; the returned trial has its measurements, state, value, error
  // and cost (its number and start time are the caller's).
  Trial run(const Config& config, int64_t number, const std::vector<uint64_t>& sizes, double effort = 1.0);

 private:
  Trial run_here(const Config& config, int64_t number, const std::vector<uint64_t>& sizes, const MeasureSettings& ms);
  Trial run_worker(const Config& config, int64_t number, const std::vector<uint64_t>& sizes,
                   const MeasureSettings& ms);

  const Space& space_;
  Kernel& kernel_;
  RunnerOptions options_;
  Isolation isolation_;
  std::shared_ptr<Telemetry> telemetry_;  // null when off
};

// The worker side: reads one request from `in_fd`, measures, writes one JSON result to
// `out_fd`. Returns the process exit code.
int worker_main(int in_fd, int out_fd);

}  // namespace acceltune
