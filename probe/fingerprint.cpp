// The definitions behind probe/fingerprint.hpp: the hardware and software fingerprint stored with
// every study, so results from different machines can be compared side by side, and the hardware
// probe behind `acceltune probe`.
#include "probe/fingerprint.hpp"

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
#include "tuner/version.hpp"

namespace acceltune {

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

// Sockets and physical cores from the sysfs CPU topology (each logical CPU names its package
// and core); hwloc, where built, gives the same numbers and overrides them.
void fill_cpu_topology(Json& cpu) {
  std::set<int64_t> packages;
  std::set<std::pair<int64_t, int64_t>> cores;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[3]))) continue;
    const int64_t pkg = text_to_int(read_first_line((e.path() / "topology/physical_package_id").string()));
    const int64_t core = text_to_int(read_first_line((e.path() / "topology/core_id").string()));
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
    found.emplace_back(text_to_int(name.substr(4)), e.path());
  }
  std::sort(found.begin(), found.end());
  for (const auto& [index, path] : found) {
    // "Node 0 MemTotal:       32791248 kB"
    std::ifstream in(path / "meminfo");
    int64_t kb = -1;
    for (std::string line; std::getline(in, line);) {
      const auto at = line.find("MemTotal:");
      if (at == std::string::npos) continue;
      kb = text_to_int(line.substr(at + 9));
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

}  // namespace

Json field_of(const Json& obj, const char* key) { return field(obj, key); }

Json sorted_items(std::vector<Json> items) {
  std::sort(items.begin(), items.end(), [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
  return Json(std::move(items));
}

Json fingerprint_fields(const Json& probe) {
  Json f = Json::object();
  const Json cpu = field(probe, "cpu");
  f["cpu"] = Json{{"model", field(cpu, "model")},
                  {"sockets", field(cpu, "sockets")},
                  {"cores", field(cpu, "cores")},
                  {"logical_cores", field(cpu, "logical_cores")},
                  {"machine", field(field(probe, "os"), "machine")}};
  f["memory_gib"] = gib_of(field(probe, "memory_bytes"));
  Json numa = Json::array();
  for (const auto& n : field(probe, "numa").is_array() ? probe["numa"] : Json::array()) {
    numa.push_back(Json{{"memory_gib", gib_of(field(n, "memory_bytes"))}, {"cpu_count", field(n, "cpu_count")}});
  }
  f["numa"] = numa;
  std::vector<std::pair<std::string, const FingerprintField*>> added;
  for (const auto& [name, rule] : FingerprintFieldRegistry::instance().entries()) added.emplace_back(name, &rule);
  std::stable_sort(added.begin(), added.end(), [](const auto& a, const auto& b) { return a.second->order < b.second->order; });
  for (const auto& [name, rule] : added) {
    Json v = rule->canonical(probe);
    if (!v.is_null()) f[name] = std::move(v);
  }
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
  const int64_t max_khz = text_to_int(read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"));
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
