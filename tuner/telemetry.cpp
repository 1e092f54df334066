// The definitions behind tuner/telemetry.hpp: telemetry during trials.
#include "tuner/telemetry.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace acceltune {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::optional<double> read_number(const fs::path& p) {
  std::ifstream in(p);
  double v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

#if ACCELTUNE_TEST_SEAMS
// The GPU readings of the test seam (see kTestGpuTempFileEnv); only in builds with the test
// hooks (ACCELTUNE_TEST_SEAMS).
class FileGpuSensor final : public GpuSensor {
 public:
  explicit FileGpuSensor(std::string path) : path_(std::move(path)) {}
  std::vector<GpuReading> read() override {
    std::ifstream in(path_);
    std::vector<std::string> tokens;
    for (std::string t; in >> t;) tokens.push_back(t);
    if (tokens.empty()) return {};
    const std::string& t = tokens[std::min(reads_++, tokens.size() - 1)];
    GpuReading r;
    try {
      const auto slash = t.find('/');
      r.temperature_c = std::stod(t.substr(0, slash));
      if (slash != std::string::npos) r.power_w = std::stod(t.substr(slash + 1));
    } catch (const std::exception&) {
      return {};
    }
    return {r};
  }

 private:
  std::string path_;
  size_t reads_ = 0;
};
#endif

struct Sample {
  Clock::time_point at;
  std::optional<uint64_t> cpu_total, cpu_idle;
  std::optional<double> mhz;
  std::string mhz_source;
  std::optional<double> loadavg_1m;
  std::map<std::string, std::pair<uint64_t, uint64_t>> nics;  // rx, tx bytes
  std::vector<GpuReading> gpus;
};

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

struct Telemetry::Impl {
  TelemetryOptions options;
  std::vector<std::unique_ptr<GpuSensor>> gpu_sensors;
  std::vector<fs::path> cpufreq_files;
  Sample before;
  double waited_seconds = 0;
  bool hot_at_start = false;
  std::vector<std::string> notes;

  void note(const std::string& line) {
    if (options.on_note) options.on_note(line);
  }

  std::vector<GpuReading> read_gpus() {
    std::vector<GpuReading> all;
    for (auto& s : gpu_sensors) {
      try {
        for (auto& r : s->read()) all.push_back(std::move(r));
      } catch (const std::exception&) {
        // A sensor that fails this time is skipped; telemetry never fails a trial.
      }
    }
    return all;
  }

  // The hottest GPU above the limit, if any.
  std::optional<GpuReading> too_hot(const std::vector<GpuReading>& gpus) const {
    std::optional<GpuReading> hot;
    for (const auto& g : gpus) {
      if (g.temperature_c && *g.temperature_c > options.thermal_limit_c &&
          (!hot || *g.temperature_c > *hot->temperature_c)) {
        hot = g;
      }
    }
    return hot;
  }

  Sample sample() {
    Sample s;
    s.at = Clock::now();
    {
      // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"; guest time is
      // already counted in user.
      std::ifstream in("/proc/stat");
      std::string label;
      uint64_t v[8] = {};
      if (in >> label && label == "cpu" && in >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7]) {
        uint64_t total = 0;
        for (uint64_t x : v) total += x;
        s.cpu_total = total;
        s.cpu_idle = v[3] + v[4];
      }
    }
    if (!cpufreq_files.empty()) {
      double sum = 0;
      int n = 0;
      for (const auto& f : cpufreq_files) {
        if (auto khz = read_number(f)) {
          sum += *khz / 1000.0;
          ++n;
        }
      }
      if (n > 0) {
        s.mhz = sum / n;
        s.mhz_source = "cpufreq";
      }
    }
    if (!s.mhz) {
      std::ifstream in("/proc/cpuinfo");
      double sum = 0;
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("cpu MHz", 0) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        try {
          sum += std::stod(line.substr(colon + 1));
          ++n;
        } catch (const std::exception&) {
        }
      }
      if (n > 0) {
        s.mhz = sum / n;
        s.mhz_source = "cpuinfo";
      }
    }
    s.loadavg_1m = read_number("/proc/loadavg");
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/sys/class/net", ec)) {
      auto rx = read_number(e.path() / "statistics/rx_bytes");
      auto tx = read_number(e.path() / "statistics/tx_bytes");
      if (rx && tx) s.nics[e.path().filename().string()] = {static_cast<uint64_t>(*rx), static_cast<uint64_t>(*tx)};
    }
    s.gpus = read_gpus();
    return s;
  }

  void guard(int64_t trial_number) {
    if (options.thermal_limit_c <= 0 || gpu_sensors.empty()) return;
    auto hot = too_hot(read_gpus());
    if (!hot) return;
    const double cap = std::max(0.0, options.thermal_wait_max_seconds);
    note(fmt::format("GPU {} at {:.0f} C is above the thermal limit of {:.0f} C; waiting up to {:g} s before trial {}",
                     hot->index, *hot->temperature_c, options.thermal_limit_c, cap, trial_number));
    const auto start = Clock::now();
    const double poll = std::clamp(cap / 10.0, 0.05, 1.0);
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    while (hot && elapsed() < cap) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(poll, cap - elapsed())));
      hot = too_hot(read_gpus());
    }
    waited_seconds = elapsed();
    if (hot) {
      hot_at_start = true;
      const std::string text =
          fmt::format("GPU {} still at {:.0f} C (limit {:.0f} C) after waiting {:.1f} s; measured anyway", hot->index,
                      *hot->temperature_c, options.thermal_limit_c, waited_seconds);
      notes.push_back(text);
      note(fmt::format("{}; trial {} is marked throttled", text, trial_number));
    } else {
      note(fmt::format("GPUs below {:.0f} C after {:.1f} s; trial {} goes on", options.thermal_limit_c, waited_seconds,
                       trial_number));
    }
  }
};

Telemetry::Telemetry(TelemetryOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
#if ACCELTUNE_TEST_SEAMS
  if (const char* file = std::getenv(kTestGpuTempFileEnv); file && *file) {
    impl_->gpu_sensors.push_back(std::make_unique<FileGpuSensor>(file));
  }
#endif
  if (impl_->gpu_sensors.empty()) {
    for (const auto& [name, info] : GpuSensorRegistry::instance().entries()) {
      try {
        if (auto s = info.make()) impl_->gpu_sensors.push_back(std::move(s));
      } catch (const std::exception&) {
      }
    }
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 || !std::isdigit(static_cast<unsigned char>(name[3]))) continue;
    const fs::path f = e.path() / "cpufreq/scaling_cur_freq";
    if (fs::exists(f, ec)) impl_->cpufreq_files.push_back(f);
  }
}

Telemetry::~Telemetry() = default;

bool Telemetry::has_gpu_sensor() const { return !impl_->gpu_sensors.empty(); }

void Telemetry::begin(int64_t trial_number) {
  impl_->waited_seconds = 0;
  impl_->hot_at_start = false;
  impl_->notes.clear();
  try {
    impl_->guard(trial_number);
    impl_->before = impl_->sample();
  } catch (const std::exception& e) {
    impl_->notes.push_back(fmt::format("telemetry before the trial failed: {}", e.what()));
    impl_->before = Sample{};
    impl_->before.at = Clock::now();
  }
}

Json Telemetry::end(const Trial& trial) {
  Impl& m = *impl_;
  Json j = Json::object();
  try {
    const Sample after = m.sample();
    const Sample& b = m.before;
    j["seconds"] = std::chrono::duration<double>(after.at - b.at).count();
    Json cpu = Json::object();
    if (b.cpu_total && after.cpu_total && *after.cpu_total > *b.cpu_total) {
      const double total = static_cast<double>(*after.cpu_total - *b.cpu_total);
      const double idle = static_cast<double>(*after.cpu_idle - std::min(*after.cpu_idle, *b.cpu_idle));
      cpu["load"] = std::clamp(1.0 - idle / total, 0.0, 1.0);
    } else {
      cpu["load"] = nullptr;  // shorter than one clock tick of /proc/stat
    }
    cpu["mhz"] = opt(after.mhz);
    if (after.mhz) cpu["mhz_source"] = after.mhz_source;
    cpu["loadavg_1m"] = opt(after.loadavg_1m);
    j["cpu"] = cpu;
    Json nics = Json::object();
    for (const auto& [name, c] : after.nics) {
      auto was = b.nics.find(name);
      if (was == b.nics.end()) continue;
      nics[name] = Json{{"rx_bytes", c.first - std::min(c.first, was->second.first)},
                        {"tx_bytes", c.second - std::min(c.second, was->second.second)}};
    }
    j["nics"] = nics;

    bool throttled = m.hot_at_start;
    std::vector<std::string> notes = m.notes;
    if (!after.gpus.empty()) {
      Json gpus = Json::array();
      double power_sum = 0;
      bool power_known = true;
      for (const auto& g : after.gpus) {
        const GpuReading* gb = nullptr;
        for (const auto& x : b.gpus) {
          if (x.index == g.index) gb = &x;
        }
        std::optional<double> power = g.power_w;
        if (gb && gb->power_w && g.power_w) power = (*gb->power_w + *g.power_w) / 2;
        if (power) power_sum += *power;
        else power_known = false;
        std::vector<std::string> reasons = g.throttle_reasons;
        if (gb) {
          for (const auto& r : gb->throttle_reasons) {
            if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
          }
        }
        if (!reasons.empty()) {
          throttled = true;
          std::string list;
          for (const auto& r : reasons) list += (list.empty() ? "" : ", ") + r;
          notes.push_back(fmt::format("GPU {} clocks were lowered: {}", g.index, list));
        }
        if (m.options.thermal_limit_c > 0 && g.temperature_c && *g.temperature_c > m.options.thermal_limit_c) {
          throttled = true;
          notes.push_back(fmt::format("GPU {} at {:.0f} C after the trial, above the thermal limit of {:.0f} C", g.index,
                                      *g.temperature_c, m.options.thermal_limit_c));
        }
        gpus.push_back(Json{{"index", g.index},
                            {"temperature_c_before", gb ? opt(gb->temperature_c) : Json(nullptr)},
                            {"temperature_c", opt(g.temperature_c)},
                            {"power_w", opt(power)},
                            {"sm_mhz", opt(g.sm_mhz)},
                            {"mem_mhz", opt(g.mem_mhz)},
                            {"throttle_reasons", reasons}});
      }
      j["gpus"] = gpus;
      // Energy per gigabyte moved, over the timed region of the sizes that measured ok.
      double timed_seconds = 0, bytes = 0;
      for (const auto& ms : trial.measurements) {
        if (ms.state != State::ok) continue;
        for (double s : ms.samples_seconds) timed_seconds += s * static_cast<double>(ms.runs_per_sample);
        bytes += static_cast<double>(ms.bytes) * static_cast<double>(ms.runs_per_sample) *
                 static_cast<double>(ms.samples_seconds.size());
      }
      if (power_known && bytes > 0 && timed_seconds > 0) {
        j["mean_power_w"] = power_sum;
        j["energy_j_per_gb"] = power_sum * timed_seconds / (bytes / 1e9);
      }
    }
    if (m.waited_seconds > 0) j["thermal_wait_seconds"] = m.waited_seconds;
    j["throttled"] = throttled;
    if (!notes.empty()) j["notes"] = notes;
  } catch (const std::exception& e) {
    j["notes"] = Json::array({fmt::format("telemetry failed: {}", e.what())});
  }
  return j;
}

}  // namespace acceltune
