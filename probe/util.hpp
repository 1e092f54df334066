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
