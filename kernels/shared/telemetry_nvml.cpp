// The GPU sensor of trial telemetry and the thermal guard: temperature, power, clocks and
// throttle reasons of every GPU through NVML (loaded at run time).
#include "probe/nvml.hpp"
#include "tuner/telemetry.hpp"

namespace acceltune {
namespace {

class NvmlSensor final : public GpuSensor {
 public:
  explicit NvmlSensor(unsigned count) : count_(count) {}
  std::vector<GpuReading> read() override {
    std::vector<GpuReading> out;
    for (unsigned i = 0; i < count_; ++i) {
      const nvml::Reading r = nvml::read(i);
      GpuReading g;
      g.index = static_cast<int>(i);
      g.temperature_c = r.temperature_c;
      g.power_w = r.power_w;
      g.sm_mhz = r.sm_mhz;
      g.mem_mhz = r.mem_mhz;
      g.throttle_reasons = r.throttle_reasons;
      out.push_back(std::move(g));
    }
    return out;
  }

 private:
  unsigned count_;
};

std::unique_ptr<GpuSensor> make_nvml_sensor() {
  if (!nvml::available()) return nullptr;
  const unsigned n = nvml::device_count();
  if (n == 0) return nullptr;
  return std::make_unique<NvmlSensor>(n);
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::GpuSensorInfo, "nvml",
                   (::acceltune::GpuSensorInfo{"GPU temperature, power, clocks and throttle reasons through NVML",
                                               ::acceltune::make_nvml_sensor}))
