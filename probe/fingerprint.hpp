// The hardware and software fingerprint stored with every study, so results from different
// machines can be compared side by side, and the hardware probe behind `acceltune probe`.
//
// The core fills what needs no optional package (host, CPU and NUMA layout from /proc and /sys,
// memory, OS, compiler, version). Probe sections registered by other folders (hwloc topology,
// NICs, RDMA devices, GPUs, library versions) add theirs; each runs in its own try block, so a
// section that fails adds a note instead of failing the probe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tuner/loader_fields.hpp"
#include "tuner/registry.hpp"
#include "tuner/version.hpp"
#include "tuner/value.hpp"

namespace acceltune {

struct ProbeSection {
  std::string description;
  // Sections run in increasing order; later ones may read what earlier ones wrote (the
  // topology section maps the GPUs and NICs found before it onto NUMA nodes).
  int order = 50;
  // Adds this section's fields to the probe. A problem that is not fatal goes into
  // probe["notes"] (add_probe_note) rather than an exception.
  std::function<void(Json& probe)> fill;
  // A section that measures (the memory reference) rather than reads: it costs a fraction of a
  // second and decides no fingerprint field, so an identity-only probe skips it.
  bool measures = false;
};
using ProbeSectionRegistry = Registry<ProbeSection>;

// The full probe: "host", "cpu" (model, sockets, cores, logical_cores, usable_cores, flags,
// max_mhz, governor),
// "memory_bytes", "numa" (per node: memory and CPUs), "os", "nics", "rdma", "gpus", "affinity",
// "memory_reference" (a short measured copy: the host memory's ceiling), "versions",
// "compiler", "acceltune", "notes"; then "fingerprint_fields" (the subset hashed)
// and "id" (fingerprint_id of it). Lists a build or machine lacks are empty, with a note.
// ProbeScope::identity skips the sections that measure: enough for the id and fingerprint_fields
// (a check that the machine is still the study's), not for link ceilings.
enum class ProbeScope { full, identity };
Json probe_fingerprint(ProbeScope scope = ProbeScope::full);

// The fields that decide performance, in canonical form. Counted:
//   cpu: model, sockets, cores, logical_cores, machine (architecture);
//   memory: total GiB (rounded, so a few MiB of kernel reservations do not count);
//   numa: per node, memory GiB (rounded) and its CPU count;
//   nics: physical NICs only (virtual ones come and go: veth, bridges, ifb), as driver, speed
//         (Mb/s) and MTU, sorted so their order does not count;
//   rdma: per device, vendor id, part id and per port link layer, active MTU, rate;
//   gpus: name, compute capability, memory MiB, maximum PCIe generation and width, NVLink
//         link count;
//   versions: CUDA driver and runtime, NCCL, UCX, MPI.
// Not counted: host names, interface and device names, addresses, clocks, temperatures, power,
// load, current PCIe link state, usable cores (they follow the caller's affinity), compiler and
// acceltune version, notes.
Json fingerprint_fields(const Json& probe);
// A field of the fingerprint a family adds (kernels/<family>/family.cpp), from the probe's
// sections: the family's hardware in canonical form. Null leaves the field out, so a family whose
// hardware no probe records changes no id. The hashed text keeps the fields' insertion order:
// the core's cpu, memory_gib and numa, then these by `order`, then versions.
struct FingerprintField {
  std::string description;
  int order = 50;
  std::function<Json(const Json& probe)> canonical;
};
using FingerprintFieldRegistry = Registry<FingerprintField>;
// obj[key], null when obj is no object or lacks it.
Json field_of(const Json& obj, const char* key);
// A list's items in a canonical order (by their text), so their order on the machine does not count.
Json sorted_items(std::vector<Json> items);

// A 12-hex-digit FNV-1a hash of fingerprint_fields(probe): pure, so a probe read from a stored
// study gives the id it was stored with.
std::string fingerprint_id(const Json& probe);


// Appends "section: text" to probe["notes"].
void add_probe_note(Json& probe, const std::string& section, const std::string& text);
// The first line of a small file, trimmed; empty when unreadable (sysfs and procfs helpers).
std::string read_first_line(const std::string& path);


}  // namespace acceltune
