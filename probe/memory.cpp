// Probe section "memory_reference": the host memory's ceiling, measured, since no spec of it is
// readable. A STREAM-style copy: one thread per usable CPU, each pinned and copying its own
// share of a buffer several times the last-level cache, pages first touched by the thread that
// copies them, with memcpy and with streaming stores in turn (which one wins depends on the
// machine); the best of a few repetitions, as STREAM reports. Per NUMA node where there are
// several (each node's CPUs copying that node's memory), else once for the machine.
//
// Counted as bytes copied per second, the convention of host-copy and of every copy figure of
// acceltune; STREAM's Copy counts each byte read and written, which is twice this.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "probe/stream_copy.hpp"
#include "probe/fingerprint.hpp"

namespace acceltune {
namespace {

constexpr int kRepetitions = 10;  // the first two settle the pages; the best of the rest counts

// The CPUs of a sysfs list ("0-3,8-11") that this process may use.
std::vector<int> usable_cpus(const std::string& list) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cpus;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string part = list.substr(at, end - at);
    const auto dash = part.find('-');
    try {
      const int lo = std::stoi(part.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      for (int c = lo; c <= hi && c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
      }
    } catch (const std::exception&) {
    }
    at = end + 1;
  }
  return cpus;
}

std::vector<int> all_usable_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  return cpus;
}

// Four times the last-level cache (STREAM's rule), at least 64 MiB per buffer, but at most 128 MiB
// so the probe stays short (a machine with a larger cache reads a figure partly from it), and at
// most an eighth of the memory of the node copied from.
size_t buffer_bytes(int64_t node_memory_bytes) {
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE) > 0 ? sysconf(_SC_LEVEL3_CACHE_SIZE) : 0;
  size_t bytes = std::max<size_t>(size_t{64} << 20, static_cast<size_t>(llc) * 4);
  bytes = std::min<size_t>(bytes, size_t{128} << 20);
  if (node_memory_bytes > 0) bytes = std::min<size_t>(bytes, static_cast<size_t>(node_memory_bytes / 8));
  return bytes & ~size_t{4095};
}

struct CopyFigure {
  double best_gbps = 0, median_gbps = 0;
  size_t threads = 0, bytes = 0;
  std::string error;
};

CopyFigure measure_copy(const std::vector<int>& cpus, size_t bytes) {
  CopyFigure f;
  f.threads = cpus.size();
  f.bytes = bytes;
  if (cpus.empty() || bytes == 0) {
    f.error = "no usable CPU";
    return f;
  }
  void* src = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* dst = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (src == MAP_FAILED || dst == MAP_FAILED) {
    if (src != MAP_FAILED) ::munmap(src, bytes);
    if (dst != MAP_FAILED) ::munmap(dst, bytes);
    f.error = fmt::format("cannot map two buffers of {} bytes", bytes);
    return f;
  }
  // Huge pages where the kernel gives them: fewer TLB misses, as a tuned copy would have.
  ::madvise(src, bytes, MADV_HUGEPAGE);
  ::madvise(dst, bytes, MADV_HUGEPAGE);
  const size_t n = cpus.size();
  const size_t share = (bytes / n) & ~size_t{63};
  std::vector<double> seconds(kRepetitions, 0);
  std::barrier start(static_cast<std::ptrdiff_t>(n)), done(static_cast<std::ptrdiff_t>(n));
  std::vector<std::chrono::steady_clock::time_point> began(kRepetitions), ended(kRepetitions);
  auto work = [&](size_t i) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[i], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    char* s = static_cast<char*>(src) + i * share;
    char* d = static_cast<char*>(dst) + i * share;
    const size_t len = i + 1 == n ? bytes - i * share : share;
    std::memset(s, static_cast<int>(i + 1), len);  // first touch: the pages land near this CPU
    std::memset(d, 0, len);
    for (int r = 0; r < kRepetitions; ++r) {
      start.arrive_and_wait();
      if (i == 0) began[r] = std::chrono::steady_clock::now();
#if defined(__x86_64__)
      // Even repetitions memcpy, odd ones streaming stores: the reference is the better of the two.
      if (r % 2) {
        copy_streaming(d, s, len);
        _mm_sfence();
      } else {
        std::memcpy(d, s, len);
      }
#else
      std::memcpy(d, s, len);
#endif
      done.arrive_and_wait();
      if (i == 0) ended[r] = std::chrono::steady_clock::now();
    }
  };
  // Every copier is a thread of its own: pinning the caller would pin the whole study after it.
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) threads.emplace_back(work, i);
  for (auto& t : threads) t.join();
  std::vector<double> rates;
  for (int r = 2; r < kRepetitions; ++r) {
    const double s = std::chrono::duration<double>(ended[r] - began[r]).count();
    if (s > 0) rates.push_back(static_cast<double>(bytes) / s / 1e9);
  }
  const bool same = std::memcmp(src, dst, bytes) == 0;
  ::munmap(src, bytes);
  ::munmap(dst, bytes);
  if (!same || rates.empty()) {
    f.error = same ? "no repetition was timed" : "the copy did not match its source";
    return f;
  }
  std::sort(rates.begin(), rates.end());
  f.best_gbps = rates.back();
  f.median_gbps = rates[rates.size() / 2];
  return f;
}

// The last-level cache the CPUs of this machine share, as the kernel describes it (the highest
// cache level of CPU 0 in sysfs: "32768K"); glibc's sysconf where sysfs has none. In a virtual
// machine sysconf may report the host chip's total (320M where the guest's L3 is 32M).
int64_t last_level_cache_bytes() {
  int best_level = 0;
  int64_t bytes = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    int64_t n = 0;
    try {
      n = std::stoll(size);
    } catch (const std::exception&) {
      continue;
    }
    const char unit = size.back();
    n *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? int64_t{1} << 30 : 1;
    if (level > best_level) {
      best_level = level;
      bytes = n;
    }
  }
  if (bytes > 0) return bytes;
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return llc > 0 ? llc : 0;
}

Json figure_json(const CopyFigure& f) {
  return Json{{"copy_gbps", f.best_gbps}, {"copy_gbps_median", f.median_gbps}, {"threads", f.threads},
              {"buffer_bytes", f.bytes}};
}

void probe_memory_reference(Json& probe) {
  Json ref = Json::object();
  ref["method"] = fmt::format(
      "STREAM-style copy: one pinned thread per usable CPU, each copying its share of buffers on huge pages where "
      "the kernel gives them, pages first touched by their thread; memcpy and streaming stores in turn, the best of "
      "{} repetitions",
      kRepetitions - 2);
  ref["counts"] = "bytes copied per second (STREAM's Copy counts bytes read and written: twice this)";
  // One copy per NUMA node where there are several (each node's CPUs on its own memory), else one
  // for the machine on every usable CPU.
  const Json numa = probe.value("numa", Json::array());
  const bool per_numa = numa.is_array() && numa.size() > 1;
  auto bytes_of = [](const Json& j) {
    return j.contains("memory_bytes") && j["memory_bytes"].is_number() ? j["memory_bytes"].get<int64_t>() : int64_t{0};
  };
  Json per_node = Json::array();
  std::optional<CopyFigure> best;
  for (const Json& node : per_numa ? numa : Json::array({Json::object()})) {
    const std::vector<int> cpus = per_numa ? usable_cpus(node.value("cpus", std::string())) : all_usable_cpus();
    if (per_numa && cpus.empty()) continue;  // a memory-only node, or none of its CPUs is ours
    const CopyFigure f = measure_copy(cpus, buffer_bytes(bytes_of(per_numa ? node : probe)));
    if (!f.error.empty()) {
      add_probe_note(probe, "memory_reference",
                     per_numa ? fmt::format("node {}: {}", node.value("node", -1), f.error) : f.error);
      continue;
    }
    if (per_numa) {
      Json j = figure_json(f);
      j["node"] = node.value("node", -1);
      per_node.push_back(j);
    }
    if (!best || f.best_gbps > best->best_gbps) best = f;
  }
  if (!best) {
    probe["memory_reference"] = nullptr;
    return;
  }
  ref.update(figure_json(*best));
  const int64_t llc = last_level_cache_bytes();
  ref["llc_bytes"] = llc > 0 ? Json(llc) : Json(nullptr);
  if (!per_node.empty()) ref["per_numa"] = per_node;
  probe["memory_reference"] = ref;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::ProbeSection, "memory_reference",
                   (::acceltune::ProbeSection{"host memory: a short STREAM-style copy as its ceiling", 70,
                                              ::acceltune::probe_memory_reference, true}))
