// The definitions behind tuner/trial.hpp: a trial.
#include "tuner/trial.hpp"

#include <chrono>
#include <cmath>
#include <ctime>

namespace acceltune {

Json Workload::to_json() const {
  Json sz = Json::array();
  for (uint64_t b : sizes) sz.push_back(b);
  return Json{{"kernel", kernel}, {"operation", operation}, {"sizes", sz}, {"dtype", dtype}, {"ranks", ranks}};
}

Expected<Workload> Workload::from_json(const Json& j) {
  if (!j.is_object() || !j.contains("kernel") || !j.contains("sizes")) {
    return input_error("workload lacks 'kernel' or 'sizes'");
  }
  Workload w;
  w.kernel = j["kernel"].get<std::string>();
  w.operation = j.value("operation", w.kernel);
  for (const auto& b : j["sizes"]) w.sizes.push_back(b.get<uint64_t>());
  w.dtype = j.value("dtype", "byte");
  w.ranks = j.value("ranks", int64_t{1});
  return w;
}

const Measurement* Trial::at_size(uint64_t bytes) const {
  for (const auto& m : measurements) {
    if (m.bytes == bytes) return &m;
  }
  return nullptr;
}

Json Trial::to_json(const Space& space) const {
  Json j = Json::object();
  j["number"] = number;
  j["state"] = std::string(to_string(state));
  j["config"] = space.config_to_json(config);
  j["key"] = key;
  j["value"] = value && std::isfinite(*value) ? Json(*value) : Json(nullptr);
  if (!error.empty()) j["error"] = error;
  j["cost_seconds"] = cost_seconds;
  if (effort != 1.0) j["effort"] = effort;
  j["started_at"] = started_at;
  Json ms = Json::array();
  for (const auto& m : measurements) ms.push_back(m.to_json());
  j["measurements"] = ms;
  if (!telemetry.is_null()) j["telemetry"] = telemetry;
  return j;
}

Expected<Trial> Trial::from_json(const Json& j, const Space& space) {
  if (!j.is_object() || !j.contains("number") || !j.contains("config") || !j.contains("state")) {
    return input_error("trial lacks 'number', 'config' or 'state'");
  }
  Trial t;
  t.number = j["number"].get<int64_t>();
  ACCELTUNE_TRY_ASSIGN(t.config, space.config_from_json(j["config"]));
  t.key = space.key(t.config);
  ACCELTUNE_TRY_ASSIGN(t.state, state_from_string(j["state"].get<std::string>()));
  if (j.contains("value") && j["value"].is_number()) t.value = j["value"].get<double>();
  t.error = j.value("error", "");
  t.cost_seconds = j.value("cost_seconds", 0.0);
  t.effort = j.value("effort", 1.0);
  t.started_at = j.value("started_at", "");
  if (j.contains("telemetry") && j["telemetry"].is_object()) t.telemetry = j["telemetry"];
  if (j.contains("measurements")) {
    for (const auto& jm : j["measurements"]) {
      ACCELTUNE_TRY_ASSIGN(Measurement m, Measurement::from_json(jm));
      t.measurements.push_back(std::move(m));
    }
  }
  return t;
}

void summarise(Trial& t) {
  t.value.reset();
  if (t.measurements.empty()) {
    if (t.state == State::ok) {
      t.state = State::failed;
      if (t.error.empty()) t.error = "no measurement";
    }
    return;
  }
  double log_sum = 0;
  for (const auto& m : t.measurements) {
    if (m.state != State::ok) {
      // The first size that went wrong decides the trial's state and message.
      if (t.state == State::ok) {
        t.state = m.state;
        t.error = fmt::format("{}: {}", format_bytes(m.bytes), m.error);
      }
      continue;
    }
    // One size: the value itself (a landscape objective may be negative). Several sizes are
    // combined by a geometric mean, which needs positive values.
    const bool single = t.measurements.size() == 1;
    if (!std::isfinite(m.value) || (!single && !(m.value > 0))) {
      if (t.state == State::ok) {
        t.state = State::invalid;
        t.error = fmt::format("{}: non-positive or NaN value {}", format_bytes(m.bytes), m.value);
      }
      continue;
    }
    log_sum += single ? m.value : std::log(m.value);
  }
  if (t.state == State::ok) {
    const double n = static_cast<double>(t.measurements.size());
    t.value = n == 1 ? log_sum : std::exp(log_sum / n);
  }
}

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace acceltune
