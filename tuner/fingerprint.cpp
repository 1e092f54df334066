// The definitions behind tuner/fingerprint.hpp: the hardware and software fingerprint stored with
// every study, so results from different machines can be compared side by side, and the hardware
// probe behind `acceltune probe`.
#include "tuner/fingerprint.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "tuner/regular_file.hpp"

#ifndef ACCELTUNE_VERSION
#define ACCELTUNE_VERSION "0.0.0"
#endif

namespace acceltune {

std::string acceltune_version() { return ACCELTUNE_VERSION; }

namespace fs = std::filesystem;

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n' || line.back() == '\r' || line.back() == '\t')) {
    line.pop_back();
  }
  return line;
}

void add_probe_note(Json& probe, const std::string& section, const std::string& text) {
  if (!probe.contains("notes") || !probe["notes"].is_array()) probe["notes"] = Json::array();
  probe["notes"].push_back(section + ": " + text);
}

namespace {

std::string read_first(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      auto colon = line.find_first_of(":=");
      if (colon == std::string::npos) return "";
      std::string v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '"')) v.erase(0, 1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '"')) v.pop_back();
      return v;
    }
  }
  return "";
}

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

int64_t to_int(const std::string& s, int64_t fallback = -1) {
  try {
    return s.empty() ? fallback : std::stoll(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

// Sockets and physical cores from the sysfs CPU topology (each logical CPU names its package
// and core); hwloc, where built, gives the same numbers and overrides them.
void fill_cpu_topology(Json& cpu) {
  std::set<int64_t> packages;
  std::set<std::pair<int64_t, int64_t>> cores;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[3]))) continue;
    const int64_t pkg = to_int(read_first_line((e.path() / "topology/physical_package_id").string()));
    const int64_t core = to_int(read_first_line((e.path() / "topology/core_id").string()));
    if (pkg < 0 || core < 0) continue;
    packages.insert(pkg);
    cores.insert({pkg, core});
  }
  cpu["sockets"] = packages.empty() ? Json(nullptr) : Json(packages.size());
  cpu["cores"] = cores.empty() ? Json(nullptr) : Json(cores.size());
  cpu["topology_source"] = "sysfs";
}

Json numa_from_sysfs() {
  Json nodes = Json::array();
  std::error_code ec;
  std::vector<std::pair<int64_t, fs::path>> found;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() < 5 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    found.emplace_back(to_int(name.substr(4)), e.path());
  }
  std::sort(found.begin(), found.end());
  for (const auto& [index, path] : found) {
    // "Node 0 MemTotal:       32791248 kB"
    std::ifstream in(path / "meminfo");
    int64_t kb = -1;
    for (std::string line; std::getline(in, line);) {
      const auto at = line.find("MemTotal:");
      if (at == std::string::npos) continue;
      kb = to_int(line.substr(at + 9));
      break;
    }
    const std::string cpus = read_first_line((path / "cpulist").string());
    nodes.push_back(Json{{"node", index},
                         {"memory_bytes", kb >= 0 ? Json(kb * 1024) : Json(nullptr)},
                         {"cpus", cpus},
                         {"cpu_count", count_cpu_list(cpus)}});
  }
  return nodes;
}

int64_t gib(const Json& bytes) {
  if (!bytes.is_number()) return -1;
  return std::llround(bytes.get<double>() / (1024.0 * 1024.0 * 1024.0));
}

Json field(const Json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) ? obj[key] : Json(nullptr);
}

// The sections a full build registers, and what their absence means.
const std::vector<std::pair<std::string, std::string>>& expected_sections() {
  static const std::vector<std::pair<std::string, std::string>> s = {
      {"topology", "this build has no hwloc (libhwloc-dev); sockets, cores and NUMA nodes come from /sys, and "
                   "GPU and NIC affinity is not known"},
      {"nics", "this build has no NIC probe"},
      {"rdma", "this build has no libibverbs (ACCELTUNE_WITH_VERBS=OFF); RDMA devices are not listed"},
      {"gpus", "this build has no GPU probe"},
      {"versions", "this build has no library version probe"},
  };
  return s;
}

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
    const int64_t speed = to_int(first_line_of(dir + "/speed"));
    const int64_t mtu = to_int(first_line_of(dir + "/mtu"));
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
      if (digits != std::string::npos) kb = to_int(meminfo.substr(digits, 20));
    }
    nodes.emplace_back(to_int(name.substr(4)),
                       Json{{"memory_gib", kb >= 0 ? gib(Json(kb * 1024)) : int64_t{-1}},
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
  f["memory_gib"] = mem.empty() ? int64_t{-1} : gib(Json(to_int(mem) * 1024));
  f["numa"] = numa_nodes();
  f["nics"] = physical_nics();
  f["gpus"] = nvidia_gpus_from_driver();
  return f;
}

Json fingerprint_fields(const Json& probe) {
  Json f = Json::object();
  const Json cpu = field(probe, "cpu");
  f["cpu"] = Json{{"model", field(cpu, "model")},
                  {"sockets", field(cpu, "sockets")},
                  {"cores", field(cpu, "cores")},
                  {"logical_cores", field(cpu, "logical_cores")},
                  {"machine", field(field(probe, "os"), "machine")}};
  f["memory_gib"] = gib(field(probe, "memory_bytes"));
  Json numa = Json::array();
  for (const auto& n : field(probe, "numa").is_array() ? probe["numa"] : Json::array()) {
    numa.push_back(Json{{"memory_gib", gib(field(n, "memory_bytes"))}, {"cpu_count", field(n, "cpu_count")}});
  }
  f["numa"] = numa;
  std::vector<Json> nics;
  for (const auto& n : field(probe, "nics").is_array() ? probe["nics"] : Json::array()) {
    if (field(n, "virtual") == Json(true)) continue;
    nics.push_back(Json{{"driver", field(n, "driver")}, {"speed_mbps", field(n, "speed_mbps")}, {"mtu", field(n, "mtu")}});
  }
  std::sort(nics.begin(), nics.end(), [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
  f["nics"] = Json(nics);
  std::vector<Json> rdma;
  for (const auto& d : field(probe, "rdma").is_array() ? probe["rdma"] : Json::array()) {
    Json ports = Json::array();
    for (const auto& p : field(d, "ports").is_array() ? d["ports"] : Json::array()) {
      ports.push_back(Json{{"link_layer", field(p, "link_layer")},
                           {"active_mtu", field(p, "active_mtu")},
                           {"rate_gbps", field(p, "rate_gbps")}});
    }
    rdma.push_back(Json{{"vendor_id", field(d, "vendor_id")}, {"vendor_part_id", field(d, "vendor_part_id")}, {"ports", ports}});
  }
  std::sort(rdma.begin(), rdma.end(), [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
  f["rdma"] = Json(rdma);
  Json gpus = Json::array();
  for (const auto& g : field(probe, "gpus").is_array() ? probe["gpus"] : Json::array()) {
    const Json mem = field(g, "memory_bytes");
    gpus.push_back(Json{{"name", field(g, "name")},
                        {"compute_capability", field(g, "compute_capability")},
                        {"memory_mib", mem.is_number() ? Json(mem.get<uint64_t>() >> 20) : Json(nullptr)},
                        {"pcie_max_gen", field(field(g, "pcie"), "max_gen")},
                        {"pcie_max_width", field(field(g, "pcie"), "max_width")},
                        {"nvlinks", field(g, "nvlinks")}});
  }
  f["gpus"] = gpus;
  const Json v = field(probe, "versions");
  Json versions = Json::object();
  for (const char* k : {"cuda_driver", "cuda_runtime", "nccl", "ucx", "mpi"}) versions[k] = field(v, k);
  f["versions"] = versions;
  return f;
}

std::string fingerprint_id(const Json& probe) {
  const std::string text = fingerprint_fields(probe).dump();
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64: fixed, so ids stay comparable across builds
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h).substr(0, 12);
}

Json probe_fingerprint(ProbeScope scope) {
  Json f = Json::object();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  f["host"] = host;

  Json cpu = Json::object();
  cpu["model"] = read_first("/proc/cpuinfo", "model name");
  cpu["logical_cores"] = std::thread::hardware_concurrency();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpu["usable_cores"] = CPU_COUNT(&set);
  fill_cpu_topology(cpu);
  const int64_t max_khz = to_int(read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"));
  cpu["max_mhz"] = max_khz > 0 ? Json(static_cast<double>(max_khz) / 1000.0) : Json(nullptr);
  // The frequency governor (cpufreq); null where the kernel exposes none (most VMs).
  const std::string governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  cpu["governor"] = governor.empty() ? Json(nullptr) : Json(governor);
  // The flags that decide which copy paths are fast.
  std::string flags = read_first("/proc/cpuinfo", "flags");
  std::istringstream fs_flags(flags);
  std::set<std::string> wanted = {"sse2", "avx", "avx2", "avx512f", "erms", "fsrm"};
  Json have = Json::array();
  for (std::string w; fs_flags >> w;) {
    if (wanted.count(w)) have.push_back(w);
  }
  cpu["flags"] = have;
  f["cpu"] = cpu;

  const std::string mem = read_first("/proc/meminfo", "MemTotal");  // "24576000 kB"
  f["memory_bytes"] = mem.empty() ? Json(nullptr) : Json(std::stoull(mem) * 1024ull);
  f["transparent_hugepages"] = read_first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  f["numa"] = numa_from_sysfs();

  struct utsname u {};
  uname(&u);
  f["os"] = Json{{"kernel", std::string(u.sysname) + " " + u.release},
                 {"machine", u.machine},
                 {"name", read_first("/etc/os-release", "PRETTY_NAME")}};
  f["nics"] = Json::array();
  f["rdma"] = Json::array();
  f["gpus"] = Json::array();
  f["affinity"] = Json::array();
  f["versions"] = Json{{"acceltune", acceltune_version()}, {"cuda_driver", "absent"}, {"cuda_runtime", "absent"},
                       {"nccl", "absent"}, {"ucx", "absent"}, {"mpi", "absent"}};
#if defined(__clang__)
  f["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  f["compiler"] = std::string("gcc ") + __VERSION__;
#else
  f["compiler"] = "unknown";
#endif
  f["acceltune"] = acceltune_version();
  f["notes"] = Json::array();

  const auto& sections = ProbeSectionRegistry::instance();
  for (const auto& [name, why] : expected_sections()) {
    if (!sections.find(name)) add_probe_note(f, name, why);
  }
  std::vector<std::pair<std::string, const ProbeSection*>> ordered;
  for (const auto& [name, s] : sections.entries()) {
    if (scope == ProbeScope::full || !s.measures) ordered.emplace_back(name, &s);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.second->order < b.second->order; });
  for (const auto& [name, s] : ordered) {
    try {
      s->fill(f);
    } catch (const std::exception& e) {
      add_probe_note(f, name, fmt::format("probe failed: {}", e.what()));
    }
  }
  f["fingerprint_fields"] = fingerprint_fields(f);
  f["id"] = fingerprint_id(f);
  f["loader_fields"] = loader_fields();
  return f;
}

}  // namespace acceltune
