// Telemetry during trials: a sample of the machine before and after each trial, stored on the
// trial ("telemetry" in trials.jsonl), and a thermal guard that waits before a trial while a GPU
// is too hot. Host readings come from /proc and /sys (CPU frequency and load, load average, NIC
// byte counters); GPU readings come from sensors that other folders register (NVML). A few
// file reads per trial; a reading that fails is left out, never fails the trial.
//
// The trial's object:
//   "seconds"            wall time between the two samples
//   "cpu"                {"load": busy share of all CPUs over the trial (from /proc/stat),
//                         "mhz": mean current frequency after the trial, "mhz_source",
//                         "loadavg_1m"}
//   "nics"               {IFACE: {"rx_bytes", "tx_bytes"}} deltas over the trial
//   "gpus"               per GPU: temperature and power before and after, SM and memory clocks
//                        and throttle reasons after
//   "energy_j_per_gb"    where power is readable: mean GPU power (sum over GPUs of the mean of
//                        the two samples) x the timed seconds / the gigabytes (1e9) moved in the
//                        timed region, over the sizes that measured ok
//   "thermal_wait_seconds"  time the guard waited before the trial (when it did)
//   "throttled"          true when a GPU reported a throttle reason (power cap, thermal or
//                        hardware slowdown) or was above the thermal limit; "notes" says which
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/registry.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

struct GpuReading {
  int index = 0;
  std::optional<double> temperature_c, power_w, sm_mhz, mem_mhz;
  // Reasons the clocks are lowered now (power cap, thermal, hardware slowdown); empty: none.
  std::vector<std::string> throttle_reasons;
};

class GpuSensor {
 public:
  virtual ~GpuSensor() = default;
  virtual std::vector<GpuReading> read() = 0;
};

struct GpuSensorInfo {
  std::string description;
  // nullptr when this machine has nothing to read (no driver library, no GPU).
  std::function<std::unique_ptr<GpuSensor>()> make;
};
using GpuSensorRegistry = Registry<GpuSensorInfo>;

// Test seam, in builds with ACCELTUNE_TEST_SEAMS only (on where the tests are built, off in the
// GPU bundle): when ACCELTUNE_TEST_GPU_TEMP_FILE names a file, it replaces every registered GPU
// sensor with one GPU read from that file. The file holds whitespace-separated readings, each
// "TEMP_C" or "TEMP_C/POWER_W"; the n-th reading of the process gets the n-th one and the last
// repeats ("95 95 60": hot twice, then cool). It exists so the thermal guard can be tested on
// machines without a GPU; nothing else reads it.
inline constexpr const char* kTestGpuTempFileEnv = "ACCELTUNE_TEST_GPU_TEMP_FILE";

struct TelemetryOptions {
  bool enabled = true;
  // The guard waits before a trial while a GPU is above this; 0 turns it off. It only acts
  // where a GPU temperature is readable.
  double thermal_limit_c = 85;
  double thermal_wait_max_seconds = 120;
  // A console line: the guard's pauses.
  std::function<void(const std::string&)> on_note;
};

class Telemetry {
 public:
  explicit Telemetry(TelemetryOptions options);
  ~Telemetry();
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  // Before a trial: the thermal guard, then the first sample.
  void begin(int64_t trial_number);
  // After it: the trial's telemetry object (see above).
  Json end(const Trial& trial);

  bool has_gpu_sensor() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace acceltune
