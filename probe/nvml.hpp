// NVML, the driver's management library, loaded at run time (libnvidia-ml.so.1 comes with the
// driver, not the toolkit, so it is never linked): static GPU facts for the probe, and
// temperature, power, clocks and throttle reasons for telemetry during trials.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace acceltune::nvml {

// True when the library loaded and initialised; otherwise `why` says what was missing.
bool available(std::string* why = nullptr);
std::string driver_version();
// The CUDA version the driver supports ("13.0"); empty when unknown.
std::string cuda_driver_version();
unsigned device_count();

struct StaticInfo {
  std::string name;
  std::string pci_address;  // normalised, "0000:1b:00.0"
  std::optional<uint64_t> memory_bytes;
  std::optional<std::string> compute_capability;
  std::optional<unsigned> pcie_current_gen, pcie_current_width, pcie_max_gen, pcie_max_width;
  std::optional<unsigned> nvlinks;  // active NVLink links
};
std::optional<StaticInfo> static_info(unsigned index);
// The NVML index of the GPU at this PCI address.
std::optional<unsigned> index_of(const std::string& pci_address);

struct Reading {
  std::optional<double> temperature_c, power_w, sm_mhz, mem_mhz, graphics_mhz;
  // The active reasons that lower clocks under load (power cap, thermal and hardware slowdown,
  // power brake); idle and application-clock settings are not listed.
  std::vector<std::string> throttle_reasons;
};
Reading read(unsigned index);

}  // namespace acceltune::nvml
