// Objectives. A kernel declares the params it applies itself, sets up a workload, runs the
// timed region and validates outside it. Kernels register by name.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/measurement.hpp"
#include "tuner/native_params.hpp"
#include "tuner/registry.hpp"
#include "tuner/space.hpp"

namespace acceltune {

struct MeasureContext {
  uint64_t seed = 0;          // the study's seed, for kernels that draw random numbers
  int64_t trial_number = 0;
};

// Where a kernel's measurements may run. Most kernels run anywhere; one that may crash or hang
// by design (fault) needs a worker process.
enum class KernelIsolation { any, worker_only, in_process_only };

class Kernel {
 public:
  virtual ~Kernel() = default;
  // The params this kernel applies in process, one row each (name, kind, domain, default, unit,
  // doc); any other param of a space must be env-bound. make_kernel refuses a value outside a
  // row's domain before attach; a param a space omits is measured at the row's default.
  virtual const NativeTable& native_table() const;
  // The names of native_table(); "*" for a kernel that takes every param as its own (replay).
  virtual std::vector<std::string> native_params() const;
  // Called once per study before any measurement: check the space fits the kernel, load
  // kernel data, restrict the space. Input errors here end the command with exit 2.
  virtual Status attach(Space& space) {
    (void)space;
    return {};
  }
  // Measures one config at one message size. Failure is data: a kernel reports a failed
  // measurement in the returned state rather than throwing.
  virtual Measurement measure(const Space& space, const Config& config, uint64_t bytes,
                              const MeasureSettings& settings, const MeasureContext& ctx) = 0;
  // The unit of Measurement::value.
  virtual std::string unit() const { return "GB/s"; }
  // False for kernels whose objective does not depend on a message size (replay).
  virtual bool sized() const { return true; }
  virtual KernelIsolation isolation() const { return KernelIsolation::any; }
  // Where the two ends of a transfer may run, for kernels that move data between two
  // processes or hosts: "loopback" (this host), "netns" (two network namespaces acceltune
  // creates), "peer" (an `acceltune serve` elsewhere). The space field "placement" chooses one
  // (the first listed when absent); a kernel that lists none runs on this host only.
  virtual std::vector<std::string> placements() const { return {}; }
  // The link the measured bytes cross, known after attach, as probe/links.hpp describes the
  // record ({"kind": "host-memory"}, {"kind": "nic", "interface": "eth0"}, ...): stored with the
  // study, so its figures are judged against that link's ceiling. Null when no single link
  // bounds the figure.
  virtual Json link() const { return nullptr; }
  // Why searching this space has nothing to tune (a search of it ends with exit 2), empty when
  // it has something. Asked before attach, from the space alone, and again after it.
  virtual std::string nothing_to_tune(const Space& space) const {
    (void)space;
    return "";
  }
};

struct KernelInfo {
  std::string description;
  bool listed = true;  // test kernels stay out of listings
  std::function<std::unique_ptr<Kernel>()> make;
};
using KernelRegistry = Registry<KernelInfo>;

// The kernel named by a space, attached to it; the space's params are checked against it.
Expected<std::unique_ptr<Kernel>> make_kernel(Space& space);
// The same, for a search: an input error when the kernel has nothing to tune in the space,
// asked before attach (so it needs no hardware when the space says enough) and after it.
Expected<std::unique_ptr<Kernel>> make_kernel_to_tune(Space& space);

// Space files other than JSON are read by loaders registered by file extension (".csv").
struct SpaceLoader {
  std::string description;
  std::function<Expected<Space>(const std::filesystem::path&)> load;
};
using SpaceLoaderRegistry = Registry<SpaceLoader>;

}  // namespace acceltune

#define ACCELTUNE_REGISTER_KERNEL(name, description, Type) \
  ACCELTUNE_REGISTER(::acceltune::KernelInfo, name,         \
                     (::acceltune::KernelInfo{description, true, [] { return std::unique_ptr<::acceltune::Kernel>(new Type()); }}))
