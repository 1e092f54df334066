// Small helpers shared by the probe sections and sensors of this folder: numbers from sysfs
// text, PCI addresses, and libraries loaded at run time.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "probe/fingerprint.hpp"

namespace acceltune::probe_util {

inline int64_t to_int(const std::string& s, int64_t fallback = -1) {
  try {
    return s.empty() ? fallback : std::stoll(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

// "0000:00:03.0" (domain:bus:device.function), lower case, 4-digit domain. NVML and CUDA write
// 8-digit domains and upper case ("00000000:1B:00.0"); empty when `id` is not a PCI address.
inline std::string normalize_pci(std::string id) {
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto colon = id.find(':');
  if (colon == std::string::npos) return "";
  std::string domain = id.substr(0, colon);
  std::string rest = id.substr(colon + 1);
  if (rest.find(':') == std::string::npos) {  // "bb:dd.f" without a domain
    rest = id;
    domain = "0000";
  }
  while (domain.size() > 4 && domain.front() == '0') domain.erase(0, 1);
  while (domain.size() < 4) domain.insert(0, "0");
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return "";
  return domain + ":" + rest;
}

// The PCI address of a sysfs device: the nearest path component above it that is one
// (a virtio NIC's device is "virtio2" below its PCI function).
inline std::string pci_address_of(const std::filesystem::path& device) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(device, ec);
  if (ec) return "";
  std::string found;
  for (const auto& part : real) {
    const std::string p = normalize_pci(part.string());
    if (!p.empty() && part.string().size() == 12) found = p;
  }
  return found;
}

// The PCIe generation of a sysfs link speed ("32.0 GT/s PCIe", older kernels "32 GT/s");
// 0 when the text names none (a virtual function reads "Unknown").
inline int pcie_gen_of_speed(const std::string& text) {
  double gts = 0;
  try {
    gts = text.empty() ? 0 : std::stod(text);
  } catch (const std::exception&) {
    return 0;
  }
  const double rates[] = {2.5, 5, 8, 16, 32, 64, 128};
  for (int i = 0; i < 7; ++i) {
    if (gts > rates[i] * 0.9 && gts < rates[i] * 1.1) return i + 1;
  }
  return 0;
}

// A PCI function's link as sysfs states it: {"current_gen", "current_width", "max_gen",
// "max_width", "source": "sysfs"}; null when the function states no link (virtual devices,
// an empty address). The maximum is the function's own; its slot may allow less.
inline Json pcie_link_from_sysfs(const std::string& pci) {
  if (pci.empty()) return nullptr;
  const std::string dir = "/sys/bus/pci/devices/" + pci + "/";
  const int cur_gen = pcie_gen_of_speed(read_first_line(dir + "current_link_speed"));
  const int max_gen = pcie_gen_of_speed(read_first_line(dir + "max_link_speed"));
  const int64_t cur_width = to_int(read_first_line(dir + "current_link_width"));
  const int64_t max_width = to_int(read_first_line(dir + "max_link_width"));
  if (max_gen <= 0 || max_width <= 0) return nullptr;
  auto or_null = [](int64_t v) { return v > 0 ? Json(v) : Json(nullptr); };
  return Json{{"current_gen", or_null(cur_gen)}, {"current_width", or_null(cur_width)}, {"max_gen", max_gen},
              {"max_width", max_width}, {"source", "sysfs"}};
}

// Opens the first library of `names` that loads (kept loaded for the life of the process:
// unloading a driver library can crash a later call into it); nullptr when none does.
inline void* open_first(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (!n || !*n) continue;
    if (void* h = ::dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  return handle ? reinterpret_cast<Fn>(::dlsym(handle, name)) : nullptr;
}

}  // namespace acceltune::probe_util
