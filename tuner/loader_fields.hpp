// The fingerprint fields a job reads cheaply, and the sysfs readers behind them. They stay in the
// core, apart from the probe (probe/fingerprint.hpp), because the runtime loader links the core
// only: no hwloc, NVML or CUDA inside a job.
#pragma once

#include <cstdint>
#include <string>

#include "tuner/value.hpp"

namespace acceltune {

// The fields of the fingerprint that a job can read cheaply, from a few files under /proc and
// /sys, without loading a library, initialising a device or starting a thread: what the runtime
// loader (libacceltune) checks before it applies a configuration, since it runs inside the job.
//   cpu_model      /proc/cpuinfo "model name"
//   logical_cpus   online CPUs
//   machine        uname's machine (x86_64, aarch64)
//   memory_gib     MemTotal, rounded to GiB
//   numa           per node: memory_gib and cpu_count
//   nics           per physical NIC (one with a device): driver, speed_mbps, mtu; sorted
//   gpus           per GPU the NVIDIA driver lists (/proc/driver/nvidia/gpus): its PCI
//                  "vendor:device"; sorted. All of the node's GPUs, so a job that narrows
//                  CUDA_VISIBLE_DEVICES still matches.
// probe_fingerprint() stores them as "loader_fields"; exports carry them as a
// "# acceltune fingerprint_fields: {...}" line.
Json loader_fields();

// "0-3,8-11" -> 8: the CPUs of a sysfs CPU list.
int64_t count_cpu_list(const std::string& list);
// A decimal integer of sysfs text, `fallback` when there is none.
int64_t text_to_int(const std::string& s, int64_t fallback = -1);
// Bytes as whole GiB, rounded (so a few MiB of kernel reservations do not count); -1 for a
// non-number.
int64_t gib_of(const Json& bytes);

}  // namespace acceltune
