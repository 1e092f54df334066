// A trial: one config measured at every message size of the workload.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/measurement.hpp"
#include "tuner/space.hpp"

namespace acceltune {

struct Workload {
  std::string kernel;
  std::string operation;
  std::vector<uint64_t> sizes;
  std::string dtype = "byte";
  int64_t ranks = 1;

  Json to_json() const;
  static Expected<Workload> from_json(const Json& j);
};

struct Trial {
  int64_t number = 0;
  Config config;
  std::string key;
  State state = State::ok;
  // The objective: geometric mean of the per-size values (so every size weighs the same);
  // empty unless every size measured ok.
  std::optional<double> value;
  std::vector<Measurement> measurements;
  double cost_seconds = 0;
  double effort = 1.0;  // measurement effort (below 1: a multi-fidelity screening trial)
  std::string error;
  std::string started_at;  // UTC, ISO 8601
  // Samples of the machine around the trial (tuner/telemetry.hpp); null when not recorded.
  Json telemetry;

  const Measurement* at_size(uint64_t bytes) const;

  Json to_json(const Space& space) const;
  static Expected<Trial> from_json(const Json& j, const Space& space);
};

// Sets state, value and error of a trial from its measurements.
void summarise(Trial& t);

std::string utc_now_iso8601();

}  // namespace acceltune
