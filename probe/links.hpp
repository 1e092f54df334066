// "Is my number right?": every link the probe sees, with a ceiling computed from the machine's own
// data and where it came from, and a study's efficiency against the ceiling of the link it
// measured, with a verdict and, for a low one, what the probe suggests. Pure functions of a probe
// (probe/fingerprint.hpp) and a study, so a study measured elsewhere is judged by its own
// machine's probe.
//
// Every ceiling is a rate per direction in bytes per second / 1e9, in the convention acceltune's
// figures count: a copy counts the bytes copied, a collective its busbw (nccl-tests). Where a
// vendor counts otherwise (GPU memory: bytes read plus bytes written) the basis says how it was
// converted.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "tuner/best.hpp"
#include "tuner/registry.hpp"
#include "tuner/value.hpp"

namespace acceltune {

// The link record a kernel gives for the path its bytes cross (Kernel::link), stored in
// study.json as "link":
//   {"kind": "host-memory"}                     host copies, shared memory
//   {"kind": "loopback"} / {"kind": "veth"}     no line rate: no ceiling
//   {"kind": "nic", "interface": "eth0"}        optional "peer_mtu" when the far end told it
//   {"kind": "pcie", "gpu": 0}                  host <-> GPU copies
//   {"kind": "gpu-memory", "gpu": 0}            copies within one GPU
//   {"kind": "gpu-peer", "gpu": 0}              GPU <-> GPU: NVLink where the probe saw active
//                                               links on that GPU, else its PCIe link
//   {"kind": "rdma", "device": "mlx5_0", "port": 1}
// A kernel whose path maps to no single link gives null.

struct LinkCeiling {
  std::string id;     // "host-memory", "gpu0.pcie", "gpu0.nvlink", "gpu0.memory", "nic:eth0", "rdma:mlx5_0/1", "lo"
  std::string kind;   // as in the link record; "virtual" for interfaces without a device
  std::string label;  // "GPU 0 (NVIDIA H200) PCIe"
  std::optional<double> gbps;  // per direction; absent: no ceiling (basis says why)
  std::string basis;           // how it was computed and from what
  std::string state;           // the link's state now, where it has one ("gen 4 x8 now, max gen 5 x16")
  std::string finding;         // what is wrong with the link itself, empty when nothing
  // A measured ceiling's lower figure (the median of its repetitions, where `gbps` is their
  // best): the ceiling lies somewhere between them, so a verdict must hold at both.
  std::optional<double> gbps_low = std::nullopt;

  Json to_json() const;
};

// How the links of one kind get their ceilings from a probe, and which ceiling a study's link
// record names. The machine's own links have their rules in probe/link_rules.cpp; a family whose
// path crosses another kind of link registers its rule from its folder.
struct LinkRule {
  std::string description{};
  int order = 50;                  // place of its ceilings in link_ceilings' list
  std::vector<std::string> kinds{};  // the link record kinds it answers for
  std::function<std::vector<LinkCeiling>(const Json& probe)> ceilings{};   // may be empty
  std::function<std::string(const Json& probe, const Json& link)> id_of{};  // the ceiling id a record names
  std::string fixed_id{};  // or, for a kind with one ceiling, its id (used where id_of is empty)
  // The device a link of this kind sits on (a NIC, an HCA): its name and its probe record, for
  // the NUMA suggestion; may be empty.
  std::function<std::pair<std::string, const Json*>(const Json& probe, const Json& link)> device{};
  // What only this kind of link suggests (a NIC's MTU below its peer's); may be empty.
  std::function<std::vector<std::string>(const Json& probe, const Json& link)> suggestions{};
  std::string no_line_rate{};  // the label of a link without a line rate ("loopback (lo)"): no ceiling by nature
};
using LinkRuleRegistry = Registry<LinkRule>;

// The ceiling id a link record names, by its kind's rule; empty for a kind no rule knows.
std::string ceiling_id_of(const Json& probe, const Json& link);

// Helpers for rules: a PCIe link's ceiling at its maximum, its state now, and the finding when it
// trained lower (`idle_lowers_gen`: GPUs lower the generation while idle, so a lower generation
// is a finding only under load); "GPU 0 (NVIDIA H200)"; "25.1 GB/s".
void pcie_ceiling(LinkCeiling& c, const Json& pcie, bool idle_lowers_gen);
std::string gpu_label(const Json& gpu);
std::string gbps_text(double gbps);

// Every link of the probe, in a stable order: host memory (per NUMA node where measured),
// loopback, NICs (virtual ones without a ceiling), RDMA ports, then per GPU its PCIe link, NVLink
// and memory.
std::vector<LinkCeiling> link_ceilings(const Json& probe);

// PCIe per direction after line encoding (8b/10b up to gen 2, 128b/130b for gen 3 to 5, FLIT
// 242/256 for gen 6): gen 5 x16 is 63.0 GB/s. 0 for an unknown generation.
double pcie_gbps(int gen, int width);
// The vendor's memory bandwidth of a GPU model (bytes read plus written), GB/s; absent when the
// model is not in the table.
std::optional<double> gpu_memory_spec_gbps(const std::string& name, double memory_gib);
// NVLink per link and direction by compute capability ("9.0"); 0 when unknown.
double nvlink_gbps_per_link(const std::string& compute_capability);

// Verdict thresholds on efficiency (measured over ceiling).
inline constexpr double kVerdictGood = 0.80;
inline constexpr double kVerdictCheck = 0.50;
// "good", "check" or "investigate".
std::string verdict_of(double efficiency);
// "good >= 80%, check >= 50%, investigate below"
std::string verdict_thresholds_text();

struct Efficiency {
  Json link;  // the study's link record (null when it has none)
  std::string link_id, link_label;
  std::optional<double> measured_gbps;
  uint64_t bytes = 0;       // the size it was measured at: where the link saturates (the highest figure)
  std::string measured_is;  // "certified" or "search, not certified"
  std::optional<double> ceiling_gbps;
  std::string ceiling_basis;
  std::optional<double> efficiency;
  // Against a measured ceiling's lower figure (LinkCeiling::gbps_low): the efficiency lies between
  // `efficiency` and this.
  std::optional<double> efficiency_high;
  // Empty without an efficiency; "no verdict" where the ceiling's spread spans two verdicts or
  // the figure may come from the cache (`note` says which).
  std::string verdict;
  std::string why_none;  // why there is no efficiency (no link recorded, no ceiling, a latency objective)
  std::vector<std::string> suggestions;  // what the probe suggests for a verdict below good, or without a ceiling
  std::string note;  // above the ceiling: why that can happen with this ceiling

  Json to_json() const;
  // "97% good", or "none: WHY" (the cell of a table).
  std::string short_text() const;
  // One line for a terminal: "link: host memory ...: 25.1 GB/s certified at 16M of 26.0 GB/s = 97%, good (...)".
  std::string line() const;
};

// A study's efficiency: `study` is its study.json (link and fingerprint), `best` its table.
Efficiency efficiency_of(const Json& study, const BestTable& best);
// The same from its parts (tests, and studies whose record is assembled elsewhere).
Efficiency efficiency_of(const Json& probe, const Json& link, const BestTable& best);

// What the probe says could hold a link back, whatever was measured: a link trained below its
// maximum, a GPU and the NIC on different NUMA nodes, an MTU below the peer's, a CPU governor not
// at performance. Each a sentence naming what to check.
std::vector<std::string> link_suggestions(const Json& probe, const Json& link);

}  // namespace acceltune
