#include "tuner/fingerprint.hpp"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tuner/strategy.hpp"

#ifndef ACCELTUNE_VERSION
#define ACCELTUNE_VERSION "0.0.0"
#endif

namespace acceltune {

std::string acceltune_version() { return ACCELTUNE_VERSION; }

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

}  // namespace

Json probe_fingerprint() {
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
  // The flags that decide which copy paths are fast.
  std::string flags = read_first("/proc/cpuinfo", "flags");
  std::istringstream fs(flags);
  std::set<std::string> wanted = {"sse2", "avx", "avx2", "avx512f", "erms", "fsrm"};
  Json have = Json::array();
  for (std::string w; fs >> w;) {
    if (wanted.count(w)) have.push_back(w);
  }
  cpu["flags"] = have;
  f["cpu"] = cpu;

  const std::string mem = read_first("/proc/meminfo", "MemTotal");  // "24576000 kB"
  f["memory_bytes"] = mem.empty() ? Json(nullptr) : Json(std::stoull(mem) * 1024ull);
  const std::string thp = [] {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string s;
    std::getline(in, s);
    return s;
  }();
  f["transparent_hugepages"] = thp;

  struct utsname u {};
  uname(&u);
  f["os"] = Json{{"kernel", std::string(u.sysname) + " " + u.release},
                 {"machine", u.machine},
                 {"name", read_first("/etc/os-release", "PRETTY_NAME")}};
#if defined(__clang__)
  f["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  f["compiler"] = std::string("gcc ") + __VERSION__;
#else
  f["compiler"] = "unknown";
#endif
  f["acceltune"] = acceltune_version();
  const std::string hw = fmt::format("{}|{}|{}|{}", cpu["model"].get<std::string>(),
                                     cpu["logical_cores"].get<unsigned>(), f["memory_bytes"].dump(),
                                     u.machine);
  f["id"] = fmt::format("{:016x}", hash_combine(0, hw)).substr(0, 12);
  return f;
}

}  // namespace acceltune
