// The definitions behind tuner/loader_fields.hpp: the fingerprint fields a job reads cheaply.
#include "tuner/loader_fields.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <vector>

#include "tuner/regular_file.hpp"

namespace acceltune {

// "0-3,8-11" -> 8 (no iostreams: the loader reads this too)
int64_t count_cpu_list(const std::string& list) {
  int64_t n = 0;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string part = list.substr(at, end - at);
    at = end + 1;
    if (part.empty()) continue;
    char* rest = nullptr;
    const long lo = std::strtol(part.c_str(), &rest, 10);
    if (rest == part.c_str()) continue;
    if (*rest == '-') {
      char* tail = nullptr;
      const long hi = std::strtol(rest + 1, &tail, 10);
      if (tail != rest + 1 && hi >= lo) n += hi - lo + 1;
    } else {
      ++n;
    }
  }
  return n;
}

int64_t text_to_int(const std::string& s, int64_t fallback) {
  try {
    return s.empty() ? fallback : std::stoll(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

int64_t gib_of(const Json& bytes) {
  if (!bytes.is_number()) return -1;
  return std::llround(bytes.get<double>() / (1024.0 * 1024.0 * 1024.0));
}

namespace {

// The loader's readers: plain open/read and opendir/readdir, no iostreams or std::filesystem,
// whose first use in a fresh process costs more than everything the loader reads.
// (/proc and /sys files are regular files of size 0, so no stat first: one syscall less each.)
// At most `max_bytes` of it; what a failed read leaves is what the caller gets.
std::string read_small(const std::string& path, size_t max_bytes = 1u << 20) {
  std::string text, why;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return text;
  read_all(fd, text, why, max_bytes);
  ::close(fd);
  return text;
}

std::string first_line_of(const std::string& path) {
  std::string t = read_small(path);
  t = t.substr(0, t.find('\n'));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\r' || t.back() == '\t')) t.pop_back();
  return t;
}

// "Key: value" or "Key = value" lines: the value of the first line starting with `key`.
std::string value_of(const std::string& text, const std::string& key) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, key.size(), key) == 0) {
      const size_t colon = text.find_first_of(":=", at);
      if (colon == std::string::npos || colon > end) return "";
      std::string v = text.substr(colon + 1, end - colon - 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
      return v;
    }
    at = end + 1;
  }
  return "";
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Json physical_nics() {
  std::vector<Json> nics;
  for (const std::string& name : entries_of("/sys/class/net")) {
    const std::string dir = "/sys/class/net/" + name;
    if (name == "lo" || !exists(dir + "/device")) continue;  // virtual ones come and go
    char link[4096];
    const ssize_t n = ::readlink((dir + "/device/driver").c_str(), link, sizeof link - 1);
    std::string driver;
    if (n > 0) {
      driver.assign(link, static_cast<size_t>(n));
      driver = driver.substr(driver.rfind('/') + 1);
    }
    const int64_t speed = text_to_int(first_line_of(dir + "/speed"));
    const int64_t mtu = text_to_int(first_line_of(dir + "/mtu"));
    nics.push_back(Json{{"driver", driver.empty() ? Json(nullptr) : Json(driver)},
                        {"speed_mbps", speed > 0 ? Json(speed) : Json(nullptr)},
                        {"mtu", mtu > 0 ? Json(mtu) : Json(nullptr)}});
  }
  std::sort(nics.begin(), nics.end(), [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
  return Json(nics);
}

Json numa_nodes() {
  std::vector<std::pair<int64_t, Json>> nodes;
  for (const std::string& name : entries_of("/sys/devices/system/node")) {
    if (name.rfind("node", 0) != 0 || name.size() < 5 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    const std::string dir = "/sys/devices/system/node/" + name;
    // "Node 0 MemTotal:       32791248 kB"
    const std::string meminfo = read_small(dir + "/meminfo");
    int64_t kb = -1;
    if (const size_t at = meminfo.find("MemTotal:"); at != std::string::npos) {
      const size_t digits = meminfo.find_first_of("0123456789", at);
      if (digits != std::string::npos) kb = text_to_int(meminfo.substr(digits, 20));
    }
    nodes.emplace_back(text_to_int(name.substr(4)),
                       Json{{"memory_gib", kb >= 0 ? gib_of(Json(kb * 1024)) : int64_t{-1}},
                            {"cpu_count", count_cpu_list(first_line_of(dir + "/cpulist"))}});
  }
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Json out = Json::array();
  for (auto& [i, n] : nodes) out.push_back(std::move(n));
  return out;
}

Json nvidia_gpus_from_driver() {
  std::vector<std::string> ids;
  for (const std::string& bdf : entries_of("/proc/driver/nvidia/gpus")) {
    std::string vendor = first_line_of("/sys/bus/pci/devices/" + bdf + "/vendor");
    std::string device = first_line_of("/sys/bus/pci/devices/" + bdf + "/device");
    for (std::string* x : {&vendor, &device}) {
      if (x->rfind("0x", 0) == 0) x->erase(0, 2);
    }
    ids.push_back(vendor + ":" + device);
  }
  std::sort(ids.begin(), ids.end());
  return Json(ids);
}

}  // namespace

Json loader_fields() {
  Json f = Json::object();
  // The model is in the first processor's block: the other CPUs' lines (a few hundred KiB on a
  // large node, each with a frequency the kernel has to ask for) are not read.
  const std::string cpuinfo = read_small("/proc/cpuinfo", 4096);
  f["cpu_model"] = value_of(cpuinfo, "model name");
  f["logical_cpus"] = static_cast<int64_t>(::sysconf(_SC_NPROCESSORS_ONLN));
  struct utsname u {};
  ::uname(&u);
  f["machine"] = std::string(u.machine);
  const std::string mem = value_of(read_small("/proc/meminfo"), "MemTotal");  // "24576000 kB"
  f["memory_gib"] = mem.empty() ? int64_t{-1} : gib_of(Json(text_to_int(mem) * 1024));
  f["numa"] = numa_nodes();
  f["nics"] = physical_nics();
  f["gpus"] = nvidia_gpus_from_driver();
  return f;
}

}  // namespace acceltune
