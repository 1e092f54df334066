// The links of the machine and their ceilings, one rule per kind of link (probe/links.hpp):
// host memory, loopback, a veth pair, NICs, RDMA ports, and each GPU's PCIe link, NVLink and
// memory. A family whose path crosses another kind of link registers its rule from its folder.
#include <fmt/format.h>

#include "probe/json_fields.hpp"
#include "probe/links.hpp"

namespace acceltune {
namespace {

const Json* find_nic(const Json& probe, const std::string& name) {
  for (const auto& n : json_list(probe, "nics")) {
    if (json_str(field_of(n, "name")) == name) return &n;
  }
  return nullptr;
}

const Json* find_rdma(const Json& probe, const std::string& device) {
  for (const auto& d : json_list(probe, "rdma")) {
    if (json_str(field_of(d, "device")) == device) return &d;
  }
  return nullptr;
}

std::vector<LinkCeiling> host_memory_ceilings(const Json& probe) {
  std::vector<LinkCeiling> out;
  // Host memory: measured, since no spec of it is readable.
  {
    const Json ref = field_of(probe, "memory_reference");
    LinkCeiling c{"host-memory", "host-memory", "host memory", std::nullopt, "", "", ""};
    if (ref.is_object() && field_of(ref, "copy_gbps").is_number()) {
      c.gbps = ref["copy_gbps"].get<double>();
      if (field_of(ref, "copy_gbps_median").is_number()) c.gbps_low = ref["copy_gbps_median"].get<double>();
      c.basis = fmt::format("measured by the probe: a STREAM-style copy on {} threads over {} MiB, best of its "
                            "repetitions (bytes copied; STREAM's Copy would print {})",
                            json_int(field_of(ref, "threads"), 0), json_int(field_of(ref, "buffer_bytes"), 0) >> 20,
                            gbps_text(2 * *c.gbps));
      const Json nodes = field_of(ref, "per_numa");
      if (nodes.is_array() && nodes.size() > 1) c.basis += "; the best NUMA node's figure";
    } else {
      c.basis = "no ceiling: this probe holds no memory reference (an older probe, or the copy could not run)";
    }
    out.push_back(c);
    const Json nodes = field_of(ref, "per_numa");
    for (const auto& n : nodes.is_array() && nodes.size() > 1 ? nodes : Json::array()) {
      LinkCeiling nc{fmt::format("host-memory.node{}", json_int(field_of(n, "node"), 0)), "host-memory",
                     fmt::format("host memory, NUMA node {}", json_int(field_of(n, "node"), 0)), std::nullopt, "", "", ""};
      if (field_of(n, "copy_gbps").is_number()) nc.gbps = n["copy_gbps"].get<double>();
      nc.basis = fmt::format("measured by the probe: the node's {} CPUs copying its own memory",
                             json_int(field_of(n, "threads"), 0));
      out.push_back(nc);
    }
  }
  return out;
}

std::vector<LinkCeiling> loopback_ceilings(const Json&) {
  std::vector<LinkCeiling> out;
  out.push_back(LinkCeiling{"lo", "loopback", "loopback (lo)", std::nullopt,
                            "no ceiling: loopback has no line rate (it is bound by memory copies and CPU)", "", ""});
  return out;
}

std::vector<LinkCeiling> nic_ceilings(const Json& probe) {
  std::vector<LinkCeiling> out;
  for (const auto& n : json_list(probe, "nics")) {
    const std::string name = json_str(field_of(n, "name"));
    LinkCeiling c{"nic:" + name, "nic", "NIC " + name, std::nullopt, "", "", ""};
    if (field_of(n, "virtual") == Json(true)) {
      c.kind = "virtual";
      c.label += " (virtual)";
      c.basis = "no ceiling: a virtual interface (veth, bridge, tunnel) has no line rate";
      out.push_back(c);
      continue;
    }
    const int64_t mbps = json_int(field_of(n, "speed_mbps"));
    c.state = fmt::format("{}, MTU {}", json_str(field_of(n, "operstate")).empty() ? "state unknown" : json_str(field_of(n, "operstate")),
                          json_int(field_of(n, "mtu"), 0));
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
    pcie_ceiling(p, field_of(n, "pcie"), false);
    if (p.gbps && *p.gbps < *c.gbps) {
      c.basis += fmt::format("; its PCIe link ({}) is narrower than the line", gbps_text(*p.gbps));
      c.gbps = p.gbps;
    }
    if (!p.state.empty()) c.state += "; PCIe " + p.state;
    c.finding = p.finding;
    out.push_back(c);
  }
  return out;
}

std::vector<LinkCeiling> rdma_ceilings(const Json& probe) {
  std::vector<LinkCeiling> out;
  for (const auto& d : json_list(probe, "rdma")) {
    const std::string dev = json_str(field_of(d, "device"));
    LinkCeiling p;
    pcie_ceiling(p, field_of(d, "pcie"), false);
    for (const auto& port : json_list(d, "ports")) {
      const int64_t num = json_int(field_of(port, "port"), 1);
      LinkCeiling c{fmt::format("rdma:{}/{}", dev, num), "rdma", fmt::format("RDMA {} port {}", dev, num),
                    std::nullopt, "", "", ""};
      c.state = fmt::format("{}, {}, active MTU {}", json_str(field_of(port, "state")), json_str(field_of(port, "link_layer")),
                            json_int(field_of(port, "active_mtu"), 0));
      const Json data = field_of(port, "data_rate_gbps");
      const Json signalling = field_of(port, "rate_gbps");
      if (data.is_number() && data.get<double>() > 0) {
        c.gbps = data.get<double>() / 8;
        c.basis = fmt::format("active rate {} Gb/s of data (signalling {} Gb/s less its line encoding), per direction",
                              data.get<double>(), json_int(signalling, 0));
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
      if (json_str(field_of(port, "state")) != "PORT_ACTIVE" && !json_str(field_of(port, "state")).empty()) {
        c.finding = fmt::format("the port is {}, not active", json_str(field_of(port, "state")));
      }
      if (!p.state.empty()) c.state += "; PCIe " + p.state;
      if (!p.finding.empty()) c.finding += (c.finding.empty() ? "" : "; ") + ("PCIe " + p.finding);
      out.push_back(c);
    }
  }
  return out;
}

std::vector<LinkCeiling> gpu_ceilings(const Json& probe) {
  std::vector<LinkCeiling> out;
  for (const auto& g : json_list(probe, "gpus")) {
    const int64_t i = json_int(field_of(g, "index"), 0);
    const std::string label = gpu_label(g);
    LinkCeiling p{fmt::format("gpu{}.pcie", i), "pcie", label + " PCIe", std::nullopt, "", "", ""};
    pcie_ceiling(p, field_of(g, "pcie"), true);
    out.push_back(p);

    const int64_t links = json_int(field_of(g, "nvlinks"));
    const std::string cc = json_str(field_of(g, "compute_capability"));
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
    const double gib = field_of(g, "memory_bytes").is_number() ? g["memory_bytes"].get<double>() / (1u << 30) : 0;
    if (auto spec = gpu_memory_spec_gbps(json_str(field_of(g, "name")), gib)) {
      mem.gbps = *spec / 2;
      mem.basis = fmt::format("the vendor's {} counts bytes read plus bytes written; a copy of N bytes moves 2N, so "
                              "{} of bytes copied",
                              gbps_text(*spec), gbps_text(*spec / 2));
    } else {
      mem.basis = fmt::format("no ceiling: '{}' is not in acceltune's table of GPU memory bandwidths",
                              json_str(field_of(g, "name")));
    }
    out.push_back(mem);
  }
  return out;
}

std::string gpu_ceiling_id(const Json& probe, const Json& link) {
  std::string kind = json_str(field_of(link, "kind"));
  const int64_t gpu = json_int(field_of(link, "gpu"), 0);
  if (kind == "gpu-peer") {  // NVLink where the probe saw active links on that GPU, else PCIe
    kind = "pcie";
    for (const auto& g : json_list(probe, "gpus")) {
      if (json_int(field_of(g, "index")) == gpu && json_int(field_of(g, "nvlinks")) > 0) kind = "nvlink";
    }
  }
  if (kind == "pcie") return fmt::format("gpu{}.pcie", gpu);
  if (kind == "nvlink") return fmt::format("gpu{}.nvlink", gpu);
  return fmt::format("gpu{}.memory", gpu);
}

// A NIC's MTU below the one its peer told.
std::vector<std::string> nic_suggestions(const Json& probe, const Json& link) {
  std::vector<std::string> out;
  const std::string name = json_str(field_of(link, "interface"));
  const Json* nic = find_nic(probe, name);
  const int64_t mtu = nic ? json_int(field_of(*nic, "mtu")) : -1;
  const int64_t peer = json_int(field_of(link, "peer_mtu"));
  if (mtu > 0 && peer > mtu) {
    out.push_back(fmt::format("{}'s MTU {} is below the peer's {}: raise it (ip link set dev {} mtu {}) where the "
                              "switches allow it",
                              name, mtu, peer, name, peer));
  }
  return out;
}

std::string nic_id(const Json&, const Json& link) { return "nic:" + json_str(field_of(link, "interface")); }

std::pair<std::string, const Json*> nic_device(const Json& probe, const Json& link) {
  const std::string name = json_str(field_of(link, "interface"));
  return {name, find_nic(probe, name)};
}

std::string rdma_id(const Json&, const Json& link) {
  return fmt::format("rdma:{}/{}", json_str(field_of(link, "device")), json_int(field_of(link, "port"), 1));
}

std::pair<std::string, const Json*> rdma_device(const Json& probe, const Json& link) {
  const std::string name = json_str(field_of(link, "device"));
  return {name, find_rdma(probe, name)};
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::LinkRule, "host-memory",
                   (::acceltune::LinkRule{
                       .description = "host memory: the probe's measured copy, per NUMA node where it measured several",
                       .order = 10,
                       .kinds = {"host-memory"},
                       .ceilings = ::acceltune::host_memory_ceilings,
                       .fixed_id = "host-memory"}))
ACCELTUNE_REGISTER(::acceltune::LinkRule, "loopback",
                   (::acceltune::LinkRule{.description = "loopback: no line rate",
                                          .order = 20,
                                          .kinds = {"loopback"},
                                          .ceilings = ::acceltune::loopback_ceilings,
                                          .fixed_id = "lo",
                                          .no_line_rate = "loopback (lo)"}))
ACCELTUNE_REGISTER(::acceltune::LinkRule, "veth",
                   (::acceltune::LinkRule{.description = "a veth pair between network namespaces: no line rate",
                                          .order = 25,
                                          .kinds = {"veth"},
                                          .fixed_id = "veth",
                                          .no_line_rate = "a veth pair"}))
ACCELTUNE_REGISTER(::acceltune::LinkRule, "nic",
                   (::acceltune::LinkRule{
                       .description = "NICs: the driver's link speed, or the NIC's PCIe link where narrower",
                       .order = 30,
                       .kinds = {"nic"},
                       .ceilings = ::acceltune::nic_ceilings,
                       .id_of = ::acceltune::nic_id,
                       .device = ::acceltune::nic_device,
                       .suggestions = ::acceltune::nic_suggestions}))
ACCELTUNE_REGISTER(::acceltune::LinkRule, "rdma",
                   (::acceltune::LinkRule{
                       .description = "RDMA ports: the active data rate, or the HCA's PCIe link where narrower",
                       .order = 40,
                       .kinds = {"rdma"},
                       .ceilings = ::acceltune::rdma_ceilings,
                       .id_of = ::acceltune::rdma_id,
                       .device = ::acceltune::rdma_device}))
ACCELTUNE_REGISTER(::acceltune::LinkRule, "gpu",
                   (::acceltune::LinkRule{.description = "GPUs: each one's PCIe link, NVLink and memory",
                                          .order = 50,
                                          .kinds = {"pcie", "nvlink", "gpu-memory", "gpu-peer"},
                                          .ceilings = ::acceltune::gpu_ceilings,
                                          .id_of = ::acceltune::gpu_ceiling_id}))
