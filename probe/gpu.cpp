// Probe section "gpus": the GPUs through the CUDA runtime (name, compute capability, memory,
// PCI bus id; linked when built with CUDA) and, where the driver's NVML loads, PCIe generation
// and width (current and maximum), active NVLink links, power, temperature and clocks. Also the
// CUDA driver and runtime versions. A CUDA error (no driver, no device) becomes an empty list
// and a note, never a failure.
#include <filesystem>
#include <string>

#include "probe/nvml.hpp"
#include "probe/util.hpp"
#include "probe/fingerprint.hpp"

#if ACCELTUNE_PROBE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace acceltune {
namespace {

std::string cuda_version_text(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

template <typename T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// What NVML adds to a GPU of the list (matched by PCI address).
void add_nvml_fields(Json& g, unsigned index) {
  auto s = nvml::static_info(index);
  if (!s) return;
  if (!g.contains("name") || g["name"].is_null()) g["name"] = s->name;
  if (!g.contains("memory_bytes") || g["memory_bytes"].is_null()) g["memory_bytes"] = opt(s->memory_bytes);
  if (!g.contains("compute_capability") || g["compute_capability"].is_null()) {
    g["compute_capability"] = opt(s->compute_capability);
  }
  g["pcie"] = Json{{"current_gen", opt(s->pcie_current_gen)},
                   {"current_width", opt(s->pcie_current_width)},
                   {"max_gen", opt(s->pcie_max_gen)},
                   {"max_width", opt(s->pcie_max_width)},
                   {"source", "nvml"}};
  g["nvlinks"] = opt(s->nvlinks);
  const nvml::Reading r = nvml::read(index);
  g["power_w"] = opt(r.power_w);
  g["temperature_c"] = opt(r.temperature_c);
  g["clocks_mhz"] = Json{{"sm", opt(r.sm_mhz)}, {"memory", opt(r.mem_mhz)}, {"graphics", opt(r.graphics_mhz)}};
  g["throttle_reasons"] = r.throttle_reasons;
}

void probe_gpus(Json& probe) {
  Json gpus = Json::array();
  std::string nvml_why;
  const bool have_nvml = nvml::available(&nvml_why);
  Json& versions = probe["versions"];
  if (have_nvml) {
    versions["nvidia_driver"] = nvml::driver_version();
    const std::string cuda = nvml::cuda_driver_version();
    if (!cuda.empty()) versions["cuda_driver"] = cuda;
  }
  bool listed = false;
#if ACCELTUNE_PROBE_WITH_CUDA
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) versions["cuda_driver"] = cuda_version_text(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0) versions["cuda_runtime"] = cuda_version_text(v);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // Say what is absent: no driver at all reads as such, not as CUDA's error code; a driver that
    // is there but older than the runtime keeps the error and says what it means.
    std::error_code ec;
    const bool driver = have_nvml || std::filesystem::exists("/proc/driver/nvidia", ec);
    const std::string cuda_error = fmt::format("cudaGetDeviceCount: {} ({})", cudaGetErrorString(err), static_cast<int>(err));
    if (!driver) {
      add_probe_note(probe, "gpus", "no NVIDIA driver (no /proc/driver/nvidia, no NVML): no GPU families here");
    } else if (err == cudaErrorInsufficientDriver) {
      add_probe_note(probe, "gpus", fmt::format("the NVIDIA driver is older than the CUDA runtime acceltune was built "
                                                "with ({}): update the driver, or build with an older toolkit",
                                                cuda_error));
    } else {
      add_probe_note(probe, "gpus", "no CUDA GPU: " + cuda_error);
    }
    (void)cudaGetLastError();  // clear the sticky error for the kernels that run after the probe
    count = 0;
  } else {
    listed = true;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      add_probe_note(probe, "gpus", fmt::format("cannot read the properties of GPU {}", i));
      continue;
    }
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    Json g = Json::object();
    g["index"] = i;
    g["name"] = p.name;
    g["compute_capability"] = fmt::format("{}.{}", p.major, p.minor);
    g["memory_bytes"] = static_cast<uint64_t>(p.totalGlobalMem);
    g["pci_address"] = probe_util::normalize_pci(bus);
    g["multiprocessors"] = p.multiProcessorCount;
    if (have_nvml) {
      if (auto k = nvml::index_of(g["pci_address"].get<std::string>())) add_nvml_fields(g, *k);
    }
    gpus.push_back(std::move(g));
  }
#else
  add_probe_note(probe, "gpus", "this build has no CUDA runtime (ACCELTUNE_WITH_CUDA=OFF); GPUs come from NVML only");
#endif
  if (!listed && have_nvml) {
    // No CUDA runtime list (not built, or it failed): NVML alone still names the GPUs.
    for (unsigned i = 0; i < nvml::device_count(); ++i) {
      auto s = nvml::static_info(i);
      if (!s) continue;
      Json g = Json{{"index", i}, {"name", s->name}, {"pci_address", s->pci_address}};
      add_nvml_fields(g, i);
      gpus.push_back(std::move(g));
    }
  }
  // Without NVML, sysfs still states each GPU's PCIe link.
  for (auto& g : gpus) {
    if (!g.contains("pcie") || g["pcie"].is_null()) {
      g["pcie"] = probe_util::pcie_link_from_sysfs(g.value("pci_address", std::string()));
    }
  }
  if (!have_nvml) {
    add_probe_note(probe, "gpus", fmt::format("{}; no PCIe, NVLink, power, temperature or clock readings", nvml_why));
  }
  probe["gpus"] = gpus;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::ProbeSection, "gpus",
                   (::acceltune::ProbeSection{"GPUs through the CUDA runtime and NVML", 40, ::acceltune::probe_gpus}))
