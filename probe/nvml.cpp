// The definitions behind probe/nvml.hpp: NVML, the driver's management library, loaded at run time
// (libnvidia-ml.so.1 comes with the driver, not the toolkit, so it is never linked).
#include "probe/nvml.hpp"

#include <mutex>

#include <fmt/format.h>

#include "probe/util.hpp"

namespace acceltune::nvml {
namespace {

// The few NVML types used here, as nvml.h declares them (a stable C ABI).
using Return = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
struct DeviceSt;
using Device = DeviceSt*;
struct Memory {
  unsigned long long total, free, used;
};
struct PciInfo {  // nvmlPciInfo_t, as filled by nvmlDeviceGetPciInfo_v3
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr int kTemperatureGpu = 0;    // NVML_TEMPERATURE_GPU
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2;

struct Api {
  Return (*init)();
  const char* (*error_string)(Return);
  Return (*system_driver_version)(char*, unsigned);
  Return (*system_cuda_version)(int*);
  Return (*count)(unsigned*);
  Return (*by_index)(unsigned, Device*);
  Return (*by_pci)(const char*, Device*);
  Return (*name)(Device, char*, unsigned);
  Return (*memory)(Device, Memory*);
  Return (*pci)(Device, PciInfo*);
  Return (*cc)(Device, int*, int*);
  Return (*pcie_cur_gen)(Device, unsigned*);
  Return (*pcie_max_gen)(Device, unsigned*);
  Return (*pcie_cur_width)(Device, unsigned*);
  Return (*pcie_max_width)(Device, unsigned*);
  Return (*nvlink_state)(Device, unsigned, int*);
  Return (*power)(Device, unsigned*);
  Return (*temperature)(Device, int, unsigned*);
  Return (*clock)(Device, int, unsigned*);
  Return (*reasons)(Device, unsigned long long*);
};

struct Loaded {
  Api api{};
  bool ok = false;
  std::string why;
};

const Loaded& loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = probe_util::open_first({"libnvidia-ml.so.1", "libnvidia-ml.so"});
    if (!h) {
      l.why = "libnvidia-ml.so.1 (the NVIDIA driver's NVML) is not installed";
      return;
    }
    using probe_util::symbol;
    Api& a = l.api;
    a.init = symbol<decltype(a.init)>(h, "nvmlInit_v2");
    a.error_string = symbol<decltype(a.error_string)>(h, "nvmlErrorString");
    a.system_driver_version = symbol<decltype(a.system_driver_version)>(h, "nvmlSystemGetDriverVersion");
    a.system_cuda_version = symbol<decltype(a.system_cuda_version)>(h, "nvmlSystemGetCudaDriverVersion_v2");
    a.count = symbol<decltype(a.count)>(h, "nvmlDeviceGetCount_v2");
    a.by_index = symbol<decltype(a.by_index)>(h, "nvmlDeviceGetHandleByIndex_v2");
    a.by_pci = symbol<decltype(a.by_pci)>(h, "nvmlDeviceGetHandleByPciBusId_v2");
    a.name = symbol<decltype(a.name)>(h, "nvmlDeviceGetName");
    a.memory = symbol<decltype(a.memory)>(h, "nvmlDeviceGetMemoryInfo");
    a.pci = symbol<decltype(a.pci)>(h, "nvmlDeviceGetPciInfo_v3");
    a.cc = symbol<decltype(a.cc)>(h, "nvmlDeviceGetCudaComputeCapability");
    a.pcie_cur_gen = symbol<decltype(a.pcie_cur_gen)>(h, "nvmlDeviceGetCurrPcieLinkGeneration");
    a.pcie_max_gen = symbol<decltype(a.pcie_max_gen)>(h, "nvmlDeviceGetMaxPcieLinkGeneration");
    a.pcie_cur_width = symbol<decltype(a.pcie_cur_width)>(h, "nvmlDeviceGetCurrPcieLinkWidth");
    a.pcie_max_width = symbol<decltype(a.pcie_max_width)>(h, "nvmlDeviceGetMaxPcieLinkWidth");
    a.nvlink_state = symbol<decltype(a.nvlink_state)>(h, "nvmlDeviceGetNvLinkState");
    a.power = symbol<decltype(a.power)>(h, "nvmlDeviceGetPowerUsage");
    a.temperature = symbol<decltype(a.temperature)>(h, "nvmlDeviceGetTemperature");
    a.clock = symbol<decltype(a.clock)>(h, "nvmlDeviceGetClockInfo");
    // Renamed "clocks event reasons" in newer drivers; the old name stays exported.
    a.reasons = symbol<decltype(a.reasons)>(h, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!a.reasons) a.reasons = symbol<decltype(a.reasons)>(h, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!a.init || !a.count || !a.by_index) {
      l.why = "libnvidia-ml.so.1 lacks nvmlInit_v2 or the device calls; the driver is too old";
      return;
    }
    const Return rc = a.init();
    if (rc != 0) {
      l.why = fmt::format("nvmlInit failed: {}", a.error_string ? a.error_string(rc) : std::to_string(rc));
      return;
    }
    l.ok = true;
  });
  return l;
}

const Api* api() { return loaded().ok ? &loaded().api : nullptr; }

std::optional<Device> device(unsigned index) {
  const Api* a = api();
  Device d = nullptr;
  if (!a || a->by_index(index, &d) != 0) return std::nullopt;
  return d;
}

template <typename Fn>
std::optional<unsigned> query(Fn fn, Device d) {
  unsigned v = 0;
  if (fn && fn(d, &v) == 0) return v;
  return std::nullopt;
}

}  // namespace

bool available(std::string* why) {
  if (why) *why = loaded().why;
  return loaded().ok;
}

std::string driver_version() {
  const Api* a = api();
  char buf[96] = {};
  if (!a || !a->system_driver_version || a->system_driver_version(buf, sizeof buf) != 0) return "";
  return buf;
}

std::string cuda_driver_version() {
  const Api* a = api();
  int v = 0;
  if (!a || !a->system_cuda_version || a->system_cuda_version(&v) != 0 || v <= 0) return "";
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

unsigned device_count() {
  const Api* a = api();
  unsigned n = 0;
  if (!a || a->count(&n) != 0) return 0;
  return n;
}

std::optional<StaticInfo> static_info(unsigned index) {
  const Api* a = api();
  auto d = device(index);
  if (!a || !d) return std::nullopt;
  StaticInfo s;
  char name[256] = {};
  if (a->name && a->name(*d, name, sizeof name) == 0) s.name = name;
  Memory m{};
  if (a->memory && a->memory(*d, &m) == 0) s.memory_bytes = m.total;
  PciInfo pci{};
  if (a->pci && a->pci(*d, &pci) == 0) {
    pci.bus_id[sizeof pci.bus_id - 1] = 0;
    s.pci_address = probe_util::normalize_pci(pci.bus_id);
  }
  int major = 0, minor = 0;
  if (a->cc && a->cc(*d, &major, &minor) == 0) s.compute_capability = fmt::format("{}.{}", major, minor);
  s.pcie_current_gen = query(a->pcie_cur_gen, *d);
  s.pcie_current_width = query(a->pcie_cur_width, *d);
  s.pcie_max_gen = query(a->pcie_max_gen, *d);
  s.pcie_max_width = query(a->pcie_max_width, *d);
  if (a->nvlink_state) {
    unsigned active = 0;
    for (unsigned link = 0; link < kMaxNvLinks; ++link) {
      int on = 0;
      if (a->nvlink_state(*d, link, &on) == 0 && on) ++active;
    }
    s.nvlinks = active;
  }
  return s;
}

std::optional<unsigned> index_of(const std::string& pci_address) {
  const std::string want = probe_util::normalize_pci(pci_address);
  const unsigned n = device_count();
  for (unsigned i = 0; i < n && !want.empty(); ++i) {
    auto s = static_info(i);
    if (s && s->pci_address == want) return i;
  }
  return std::nullopt;
}

Reading read(unsigned index) {
  Reading r;
  const Api* a = api();
  auto d = device(index);
  if (!a || !d) return r;
  unsigned v = 0;
  if (a->temperature && a->temperature(*d, kTemperatureGpu, &v) == 0) r.temperature_c = v;
  if (a->power && a->power(*d, &v) == 0) r.power_w = v / 1000.0;  // milliwatts
  if (a->clock && a->clock(*d, kClockSm, &v) == 0) r.sm_mhz = v;
  if (a->clock && a->clock(*d, kClockMem, &v) == 0) r.mem_mhz = v;
  if (a->clock && a->clock(*d, kClockGraphics, &v) == 0) r.graphics_mhz = v;
  unsigned long long reasons = 0;
  if (a->reasons && a->reasons(*d, &reasons) == 0) {
    static const std::pair<unsigned long long, const char*> names[] = {
        {0x4ull, "sw_power_cap"},         {0x8ull, "hw_slowdown"},          {0x20ull, "sw_thermal_slowdown"},
        {0x40ull, "hw_thermal_slowdown"}, {0x80ull, "hw_power_brake_slowdown"}};
    for (const auto& [bit, name] : names) {
      if (reasons & bit) r.throttle_reasons.emplace_back(name);
    }
  }
  return r;
}

}  // namespace acceltune::nvml
