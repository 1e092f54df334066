// Link ceilings, efficiencies and verdicts (tuner/links.hpp).
#include "tuner/links.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace acceltune {
namespace {

Json field(const Json& j, const char* key) { return j.is_object() && j.contains(key) ? j[key] : Json(nullptr); }
const Json& list(const Json& j, const char* key) {
  static const Json empty = Json::array();
  return j.is_object() && j.contains(key) && j[key].is_array() ? j[key] : empty;
}
int64_t int_of(const Json& j, int64_t fallback = -1) {
  return j.is_number() ? static_cast<int64_t>(j.get<double>()) : fallback;
}
std::string str_of(const Json& j) { return j.is_string() ? j.get<std::string>() : ""; }

std::string gbps_text(double gbps) {
  if (gbps >= 1000) return fmt::format("{:.2f} TB/s", gbps / 1000);
  if (gbps >= 100) return fmt::format("{:.0f} GB/s", gbps);
  if (gbps >= 10) return fmt::format("{:.1f} GB/s", gbps);
  return fmt::format("{:.2f} GB/s", gbps);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A PCIe link's ceiling at its maximum, its state now, and the finding when it trained lower.
// `idle_lowers_gen`: GPUs lower the generation while idle, so a lower generation is a finding only
// under load (the width does not change with power state).
void pcie_ceiling(LinkCeiling& c, const Json& pcie, bool idle_lowers_gen) {
  const int64_t max_gen = int_of(field(pcie, "max_gen")), max_w = int_of(field(pcie, "max_width"));
  const int64_t cur_gen = int_of(field(pcie, "current_gen")), cur_w = int_of(field(pcie, "current_width"));
  const std::string source = str_of(field(pcie, "source"));
  if (max_gen <= 0 || max_w <= 0 || pcie_gbps(static_cast<int>(max_gen), static_cast<int>(max_w)) <= 0) {
    c.basis = "the probe read no PCIe generation and width for it";
    return;
  }
  c.gbps = pcie_gbps(static_cast<int>(max_gen), static_cast<int>(max_w));
  c.basis = fmt::format("PCIe gen {} x{} (maximum{}), after line encoding, per direction; a copy reaches about 80-90% "
                        "of it (packet headers)",
                        max_gen, max_w, source.empty() ? "" : ", from " + source);
  if (cur_gen <= 0 || cur_w <= 0) return;
  c.state = fmt::format("gen {} x{} ({}) of maximum gen {} x{}", cur_gen, cur_w,
                        gbps_text(pcie_gbps(static_cast<int>(cur_gen), static_cast<int>(cur_w))), max_gen, max_w);
  std::vector<std::string> low;
  if (cur_w < max_w) low.push_back(fmt::format("width x{} of x{}", cur_w, max_w));
  if (cur_gen < max_gen) {
    low.push_back(idle_lowers_gen
                      ? fmt::format("gen {} of gen {} when probed (a GPU lowers it while idle: confirm under load, "
                                    "nvidia-smi -q -d PCIE)",
                                    cur_gen, max_gen)
                      : fmt::format("gen {} of gen {}", cur_gen, max_gen));
  }
  if (!low.empty()) {
    std::string joined;
    for (const auto& l : low) joined += (joined.empty() ? "" : ", ") + l;
    c.finding = fmt::format("trained below its maximum: {} (reseat the card, check the slot's lanes and the BIOS "
                            "link settings)",
                            joined);
  }
}

std::string gpu_label(const Json& g) {
  return fmt::format("GPU {} ({})", int_of(field(g, "index"), 0), str_of(field(g, "name")).empty() ? "unnamed" : str_of(field(g, "name")));
}

const Json* find_nic(const Json& probe, const std::string& name) {
  for (const auto& n : list(probe, "nics")) {
    if (str_of(field(n, "name")) == name) return &n;
  }
  return nullptr;
}

const Json* find_rdma(const Json& probe, const std::string& device) {
  for (const auto& d : list(probe, "rdma")) {
    if (str_of(field(d, "device")) == device) return &d;
  }
  return nullptr;
}

// The ceiling id a link record names. "gpu-peer" (GPU to GPU) is NVLink where the probe saw
// active links on that GPU, else its PCIe link.
std::string ceiling_id_of(const Json& probe, const Json& link) {
  std::string kind = str_of(field(link, "kind"));
  if (kind == "gpu-peer") {
    kind = "pcie";
    for (const auto& g : list(probe, "gpus")) {
      if (int_of(field(g, "index")) == int_of(field(link, "gpu"), 0) && int_of(field(g, "nvlinks")) > 0) kind = "nvlink";
    }
  }
  if (kind == "host-memory") return "host-memory";
  if (kind == "loopback") return "lo";
  if (kind == "veth") return "veth";
  if (kind == "nic") return "nic:" + str_of(field(link, "interface"));
  if (kind == "pcie") return fmt::format("gpu{}.pcie", int_of(field(link, "gpu"), 0));
  if (kind == "nvlink") return fmt::format("gpu{}.nvlink", int_of(field(link, "gpu"), 0));
  if (kind == "gpu-memory") return fmt::format("gpu{}.memory", int_of(field(link, "gpu"), 0));
  if (kind == "rdma") return fmt::format("rdma:{}/{}", str_of(field(link, "device")), int_of(field(link, "port"), 1));
  return "";
}

// A NIC's or HCA's NUMA node, by name in the probe.
std::optional<int64_t> device_numa(const Json& probe, const Json& link) {
  const std::string kind = str_of(field(link, "kind"));
  const Json* d = kind == "nic" ? find_nic(probe, str_of(field(link, "interface")))
                  : kind == "rdma" ? find_rdma(probe, str_of(field(link, "device")))
                                   : nullptr;
  if (!d) return std::nullopt;
  const int64_t n = int_of(field(*d, "numa_node"));
  return n >= 0 ? std::optional<int64_t>(n) : std::nullopt;
}

}  // namespace

double pcie_gbps(int gen, int width) {
  // GT/s per lane and the share of it that is data.
  struct Row {
    double gts, encoding;
  };
  static const Row rows[] = {{2.5, 8.0 / 10}, {5, 8.0 / 10}, {8, 128.0 / 130}, {16, 128.0 / 130},
                             {32, 128.0 / 130}, {64, 242.0 / 256}};
  if (gen < 1 || gen > 6 || width <= 0) return 0;
  return rows[gen - 1].gts * rows[gen - 1].encoding * width / 8;
}

std::optional<double> gpu_memory_spec_gbps(const std::string& name, double memory_gib) {
  // Vendor datasheets; the first pattern the lower-case name contains wins, so specific first.
  struct Row {
    const char* pattern;
    double gbps;
  };
  static const Row rows[] = {
      {"gb200", 8000}, {"b200", 8000}, {"b100", 8000}, {"h200", 4800}, {"h100 nvl", 3900}, {"h100 pcie", 2000},
      {"h100", 3350}, {"h800", 3350}, {"a100 80gb pcie", 1935}, {"a100-pcie-80gb", 1935}, {"a100-sxm4-80gb", 2039},
      {"a100", 1555}, {"a800", 2039}, {"a30", 933}, {"a40", 696}, {"a10g", 600}, {"a10", 600}, {"l40s", 864},
      {"l40", 864}, {"l4", 300}, {"v100s", 1134}, {"v100", 900}, {"t4", 320}, {"rtx 6000 ada", 960},
      {"rtx 4090", 1008}, {"rtx a6000", 768},
  };
  const std::string n = lower(name);
  if (n.find("gh200") != std::string::npos) return memory_gib > 110 ? 4900.0 : 4000.0;  // HBM3e 144 GB, HBM3 96 GB
  for (const auto& r : rows) {
    if (n.find(r.pattern) != std::string::npos) return r.gbps;
  }
  return std::nullopt;
}

double nvlink_gbps_per_link(const std::string& cc) {
  if (cc == "6.0") return 20;                     // P100, NVLink 1
  if (cc == "7.0") return 25;                     // V100, NVLink 2
  if (cc == "8.0") return 25;                     // A100, NVLink 3
  if (cc == "8.6") return 14.0625;                // A40 / RTX A6000 bridges, NVLink 3 at 4 lanes
  if (cc == "9.0") return 25;                     // H100, H200, GH200: NVLink 4
  if (cc.rfind("10.", 0) == 0) return 50;         // B200, GB200: NVLink 5
  return 0;
}

std::string verdict_of(double efficiency) {
  if (efficiency >= kVerdictGood) return "good";
  if (efficiency >= kVerdictCheck) return "check";
  return "investigate";
}

std::string verdict_thresholds_text() {
  return fmt::format("good >= {:.0f}%, check >= {:.0f}%, investigate below", kVerdictGood * 100, kVerdictCheck * 100);
}

std::vector<LinkCeiling> link_ceilings(const Json& probe) {
  std::vector<LinkCeiling> out;

  // Host memory: measured, since no spec of it is readable.
  {
    const Json ref = field(probe, "memory_reference");
    LinkCeiling c{"host-memory", "host-memory", "host memory", std::nullopt, "", "", ""};
    if (ref.is_object() && field(ref, "copy_gbps").is_number()) {
      c.gbps = ref["copy_gbps"].get<double>();
      c.basis = fmt::format("measured by the probe: a STREAM-style copy on {} threads over {} MiB, best of its "
                            "repetitions (bytes copied; STREAM's Copy would print {})",
                            int_of(field(ref, "threads"), 0), int_of(field(ref, "buffer_bytes"), 0) >> 20,
                            gbps_text(2 * *c.gbps));
      const Json nodes = field(ref, "per_numa");
      if (nodes.is_array() && nodes.size() > 1) c.basis += "; the best NUMA node's figure";
    } else {
      c.basis = "no ceiling: this probe holds no memory reference (an older probe, or the copy could not run)";
    }
    out.push_back(c);
    const Json nodes = field(ref, "per_numa");
    for (const auto& n : nodes.is_array() && nodes.size() > 1 ? nodes : Json::array()) {
      LinkCeiling nc{fmt::format("host-memory.node{}", int_of(field(n, "node"), 0)), "host-memory",
                     fmt::format("host memory, NUMA node {}", int_of(field(n, "node"), 0)), std::nullopt, "", "", ""};
      if (field(n, "copy_gbps").is_number()) nc.gbps = n["copy_gbps"].get<double>();
      nc.basis = fmt::format("measured by the probe: the node's {} CPUs copying its own memory",
                             int_of(field(n, "threads"), 0));
      out.push_back(nc);
    }
  }

  out.push_back(LinkCeiling{"lo", "loopback", "loopback (lo)", std::nullopt,
                            "no ceiling: loopback has no line rate (it is bound by memory copies and CPU)", "", ""});

  for (const auto& n : list(probe, "nics")) {
    const std::string name = str_of(field(n, "name"));
    LinkCeiling c{"nic:" + name, "nic", "NIC " + name, std::nullopt, "", "", ""};
    if (field(n, "virtual") == Json(true)) {
      c.kind = "virtual";
      c.label += " (virtual)";
      c.basis = "no ceiling: a virtual interface (veth, bridge, tunnel) has no line rate";
      out.push_back(c);
      continue;
    }
    const int64_t mbps = int_of(field(n, "speed_mbps"));
    c.state = fmt::format("{}, MTU {}", str_of(field(n, "operstate")).empty() ? "state unknown" : str_of(field(n, "operstate")),
                          int_of(field(n, "mtu"), 0));
    if (mbps <= 0) {
      c.basis = "no ceiling: the driver reports no link speed (link down, or a virtual NIC such as virtio)";
      out.push_back(c);
      continue;
    }
    c.gbps = static_cast<double>(mbps) / 8000.0;
    c.basis = fmt::format("line rate {} Gb/s from the driver's reported speed, per direction, before Ethernet, IP and "
                          "TCP headers (about 94% is payload at MTU 1500, 99% at 9000)",
                          static_cast<double>(mbps) / 1000.0);
    // The NIC's own PCIe link can be the narrower one.
    LinkCeiling p;
    pcie_ceiling(p, field(n, "pcie"), false);
    if (p.gbps && *p.gbps < *c.gbps) {
      c.basis += fmt::format("; its PCIe link ({}) is narrower than the line", gbps_text(*p.gbps));
      c.gbps = p.gbps;
    }
    if (!p.state.empty()) c.state += "; PCIe " + p.state;
    c.finding = p.finding;
    out.push_back(c);
  }

  for (const auto& d : list(probe, "rdma")) {
    const std::string dev = str_of(field(d, "device"));
    LinkCeiling p;
    pcie_ceiling(p, field(d, "pcie"), false);
    for (const auto& port : list(d, "ports")) {
      const int64_t num = int_of(field(port, "port"), 1);
      LinkCeiling c{fmt::format("rdma:{}/{}", dev, num), "rdma", fmt::format("RDMA {} port {}", dev, num),
                    std::nullopt, "", "", ""};
      c.state = fmt::format("{}, {}, active MTU {}", str_of(field(port, "state")), str_of(field(port, "link_layer")),
                            int_of(field(port, "active_mtu"), 0));
      const Json data = field(port, "data_rate_gbps");
      const Json signalling = field(port, "rate_gbps");
      if (data.is_number() && data.get<double>() > 0) {
        c.gbps = data.get<double>() / 8;
        c.basis = fmt::format("active rate {} Gb/s of data (signalling {} Gb/s less its line encoding), per direction",
                              data.get<double>(), int_of(signalling, 0));
      } else if (signalling.is_number() && signalling.get<double>() > 0) {
        c.gbps = signalling.get<double>() / 8;
        c.basis = fmt::format("active rate {} Gb/s (signalling; this probe did not record the data rate), per direction",
                              signalling.get<double>());
      } else {
        c.basis = "no ceiling: the port reports no active rate";
      }
      if (c.gbps && p.gbps && *p.gbps < *c.gbps) {
        c.basis += fmt::format("; its PCIe link ({}) is narrower than the port", gbps_text(*p.gbps));
        c.gbps = p.gbps;
      }
      if (str_of(field(port, "state")) != "PORT_ACTIVE" && !str_of(field(port, "state")).empty()) {
        c.finding = fmt::format("the port is {}, not active", str_of(field(port, "state")));
      }
      if (!p.state.empty()) c.state += "; PCIe " + p.state;
      if (!p.finding.empty()) c.finding += (c.finding.empty() ? "" : "; ") + ("PCIe " + p.finding);
      out.push_back(c);
    }
  }

  for (const auto& g : list(probe, "gpus")) {
    const int64_t i = int_of(field(g, "index"), 0);
    const std::string label = gpu_label(g);
    LinkCeiling p{fmt::format("gpu{}.pcie", i), "pcie", label + " PCIe", std::nullopt, "", "", ""};
    pcie_ceiling(p, field(g, "pcie"), true);
    out.push_back(p);

    const int64_t links = int_of(field(g, "nvlinks"));
    const std::string cc = str_of(field(g, "compute_capability"));
    LinkCeiling nv{fmt::format("gpu{}.nvlink", i), "nvlink", label + " NVLink", std::nullopt, "", "", ""};
    if (links > 0 && nvlink_gbps_per_link(cc) > 0) {
      nv.gbps = static_cast<double>(links) * nvlink_gbps_per_link(cc);
      nv.basis = fmt::format("{} active links x {} GB/s per link and direction (NVLink of compute capability {})", links,
                             nvlink_gbps_per_link(cc), cc);
      out.push_back(nv);
    } else if (links > 0) {
      nv.basis = fmt::format("no ceiling: {} active links, but the NVLink generation of compute capability '{}' is not "
                             "in acceltune's table",
                             links, cc);
      out.push_back(nv);
    }

    LinkCeiling mem{fmt::format("gpu{}.memory", i), "gpu-memory", label + " memory", std::nullopt, "", "", ""};
    const double gib = field(g, "memory_bytes").is_number() ? g["memory_bytes"].get<double>() / (1u << 30) : 0;
    if (auto spec = gpu_memory_spec_gbps(str_of(field(g, "name")), gib)) {
      mem.gbps = *spec / 2;
      mem.basis = fmt::format("the vendor's {} counts bytes read plus bytes written; a copy of N bytes moves 2N, so "
                              "{} of bytes copied",
                              gbps_text(*spec), gbps_text(*spec / 2));
    } else {
      mem.basis = fmt::format("no ceiling: '{}' is not in acceltune's table of GPU memory bandwidths",
                              str_of(field(g, "name")));
    }
    out.push_back(mem);
  }
  return out;
}

std::vector<std::string> link_suggestions(const Json& probe, const Json& link) {
  std::vector<std::string> out;
  const std::string kind = str_of(field(link, "kind"));
  const std::string id = ceiling_id_of(probe, link);
  for (const auto& c : link_ceilings(probe)) {
    if (c.id == id && !c.finding.empty()) out.push_back(c.label + ": " + c.finding);
  }
  // A GPU and the NIC on different NUMA nodes: data between them crosses the socket link.
  if (kind == "nic" || kind == "rdma") {
    if (const auto node = device_numa(probe, link)) {
      const std::string dev = kind == "nic" ? str_of(field(link, "interface")) : str_of(field(link, "device"));
      for (const auto& g : list(probe, "gpus")) {
        const int64_t gn = int_of(field(g, "numa_node"));
        if (gn >= 0 && gn != *node) {
          out.push_back(fmt::format("{} is on NUMA node {} and {} on node {}: traffic between them crosses the socket "
                                    "link; pair each GPU with a NIC on its own node (NCCL_IB_HCA, UCX_NET_DEVICES) and "
                                    "bind its rank to that node's CPUs",
                                    gpu_label(g), gn, dev, *node));
        }
      }
    }
  }
  if (kind == "nic") {
    const Json* nic = find_nic(probe, str_of(field(link, "interface")));
    const int64_t mtu = nic ? int_of(field(*nic, "mtu")) : -1;
    const int64_t peer = int_of(field(link, "peer_mtu"));
    if (mtu > 0 && peer > mtu) {
      out.push_back(fmt::format("{}'s MTU {} is below the peer's {}: raise it (ip link set dev {} mtu {}) where the "
                                "switches allow it",
                                str_of(field(link, "interface")), mtu, peer, str_of(field(link, "interface")), peer));
    }
  }
  const std::string governor = str_of(field(field(probe, "cpu"), "governor"));
  if (!governor.empty() && governor != "performance") {
    out.push_back(fmt::format("the CPU frequency governor is '{}', not 'performance': cpupower frequency-set -g "
                              "performance (or the BIOS power profile)",
                              governor));
  }
  return out;
}

Efficiency efficiency_of(const Json& study, const BestTable& best) {
  return efficiency_of(field(study, "fingerprint"), field(study, "link"), best);
}

Efficiency efficiency_of(const Json& probe, const Json& link, const BestTable& best) {
  Efficiency e;
  e.link = link;
  if (!link.is_object() || str_of(field(link, "kind")).empty()) {
    e.why_none = "the study records no link (its kernel maps to no single link, or it predates link records)";
    return e;
  }
  e.link_id = ceiling_id_of(probe, link);
  const auto ceilings = link_ceilings(probe);
  const LinkCeiling* c = nullptr;
  for (const auto& x : ceilings) {
    if (x.id == e.link_id) c = &x;
  }
  const std::string kind = str_of(field(link, "kind"));
  if (!c && (kind == "loopback" || kind == "veth")) {
    e.link_label = kind == "veth" ? "a veth pair" : "loopback (lo)";
    e.why_none = fmt::format("no ceiling: {} has no line rate", e.link_label);
  } else if (!c) {
    e.link_label = e.link_id;
    e.why_none = fmt::format("the study's probe lists no link '{}'", e.link_id);
  } else {
    e.link_label = c->label;
    e.ceiling_gbps = c->gbps;
    e.ceiling_basis = c->basis;
    if (!c->gbps) e.why_none = c->basis;
  }
  // The measured best: the highest certified median over the sizes (the size where the link
  // saturates), else the search's recommendation, named as such.
  // Host memory: only sizes whose two buffers span at least the probe's reference buffer, so a
  // copy served from the caches is not judged against memory.
  uint64_t min_bytes = 0;
  if (kind == "host-memory") {
    min_bytes = static_cast<uint64_t>(int_of(field(field(probe, "memory_reference"), "buffer_bytes"), 0)) / 2;
  }
  for (const bool certified : {true, false}) {
    for (const auto& s : best.sizes) {
      if (s.bytes < min_bytes) continue;
      const bool has = certified ? s.certified && s.certified_rounds > 0 : s.best_trial.has_value();
      const double v = !has ? 0 : certified ? std::max(s.certified_value, s.certified_default_value) : s.best_value;
      if (v > 0 && (!e.measured_gbps || v > *e.measured_gbps)) {
        e.measured_gbps = v;
        e.bytes = s.bytes;
        e.measured_is = certified ? "certified" : "search, not certified";
      }
    }
    if (e.measured_gbps) break;
  }
  if (best.unit != "GB/s") {
    e.why_none = fmt::format("the objective is in {}, not a bandwidth: a link's ceiling does not apply", best.unit);
    return e;
  }
  if (!e.measured_gbps) {
    if (e.why_none.empty()) {
      e.why_none = min_bytes > 0 ? fmt::format("no size of at least {} measured ok (smaller copies run from the caches, "
                                               "and host memory's ceiling counts from half the probe's reference buffer)",
                                               format_bytes(min_bytes))
                                 : "nothing measured ok";
    }
    return e;
  }
  if (!e.ceiling_gbps) {
    // No ceiling, no verdict; what the probe finds about the link still holds.
    e.suggestions = link_suggestions(probe, link);
    return e;
  }
  e.efficiency = *e.measured_gbps / *e.ceiling_gbps;
  e.verdict = verdict_of(*e.efficiency);
  // A copy whose two buffers fit the last-level cache may be served from it.
  const int64_t llc = int_of(field(field(probe, "memory_reference"), "llc_bytes"), 0);
  if (kind == "host-memory" && llc > 0 && 2 * e.bytes <= static_cast<uint64_t>(llc)) {
    e.note = fmt::format("at {} the two buffers ({}) fit this machine's {} last-level cache: the figure may come "
                         "from the cache rather than memory; ",
                         format_bytes(e.bytes), format_bytes(2 * e.bytes), format_bytes(static_cast<uint64_t>(llc)));
  }
  if (*e.efficiency > 1.0) {
    e.note += kind == "host-memory"
                 ? "above the reference: the probe's copy is itself a measurement (noisy on a shared machine), and a "
                   "copy tuned for this size can beat it"
                 : "above the ceiling: check the figure's convention (a collective's busbw, a copy counting bytes once)";
  }
  if (e.note.size() >= 2 && e.note.compare(e.note.size() - 2, 2, "; ") == 0) e.note.resize(e.note.size() - 2);
  if (e.verdict != "good") e.suggestions = link_suggestions(probe, link);
  return e;
}

Json LinkCeiling::to_json() const {
  return Json{{"id", id}, {"kind", kind}, {"label", label}, {"gbps", gbps ? Json(*gbps) : Json(nullptr)},
              {"basis", basis}, {"state", state}, {"finding", finding}};
}

std::string Efficiency::short_text() const {
  if (!efficiency) return "none: " + why_none;
  return fmt::format("{:.0f}% {} ({} of {}, {})", *efficiency * 100, verdict, gbps_text(*measured_gbps),
                     gbps_text(*ceiling_gbps), link_label);
}

Json Efficiency::to_json() const {
  Json j = Json::object();
  j["link"] = link;
  j["link_id"] = link_id;
  j["link_label"] = link_label;
  j["measured_gbps"] = measured_gbps ? Json(*measured_gbps) : Json(nullptr);
  j["bytes"] = bytes;
  j["measured_is"] = measured_is;
  j["ceiling_gbps"] = ceiling_gbps ? Json(*ceiling_gbps) : Json(nullptr);
  j["ceiling_basis"] = ceiling_basis;
  j["efficiency"] = efficiency ? Json(*efficiency) : Json(nullptr);
  j["verdict"] = verdict;
  j["thresholds"] = verdict_thresholds_text();
  j["why_none"] = why_none;
  j["suggestions"] = suggestions;
  j["note"] = note;
  return j;
}

std::string Efficiency::line() const {
  const std::string where = link_label.empty() ? "link" : "link " + link_label;
  if (!efficiency) return fmt::format("{}: no efficiency: {}", where, why_none);
  return fmt::format("{}: {} {} at {} of {} = {:.0f}%, {} ({})", where, gbps_text(*measured_gbps), measured_is,
                     format_bytes(bytes), gbps_text(*ceiling_gbps), *efficiency * 100, verdict,
                     verdict_thresholds_text());
}

}  // namespace acceltune
