// Probe section "topology" (hwloc): packages, cores and NUMA nodes with their memory, and the
// affinity of each GPU: its NUMA node, the CPUs near it, and how far each NIC and RDMA device is
// on the PCIe tree, in nvidia-smi's words: PIX (behind the same PCIe switch), PHB (the same
// host bridge), NODE (another host bridge on the same NUMA node), SYS (across sockets).
// It runs after the NIC, RDMA and GPU sections, whose lists it reads.
#include <hwloc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "probe/util.hpp"
#include "probe/fingerprint.hpp"

namespace acceltune {
namespace {

std::string cpu_list(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (!set || hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return "";
  std::string s = text;
  std::free(text);
  return s;
}

hwloc_obj_t pci_object(hwloc_topology_t topo, const std::string& address) {
  unsigned domain = 0, bus = 0, dev = 0, func = 0;
  if (std::sscanf(address.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4) return nullptr;
  return hwloc_get_pcidev_by_busid(topo, domain, bus, dev, func);
}

// The first NUMA node of a non-I/O object, or -1.
int64_t numa_of(hwloc_obj_t obj) {
  if (!obj || !obj->nodeset || hwloc_bitmap_iszero(obj->nodeset)) return -1;
  return hwloc_bitmap_first(obj->nodeset);
}

std::string distance(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b) {
  hwloc_obj_t common = hwloc_get_common_ancestor_obj(topo, a, b);
  if (common && common->type == HWLOC_OBJ_BRIDGE) {
    return common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? "PHB" : "PIX";
  }
  if (common && common->type == HWLOC_OBJ_PCI_DEVICE) return "PIX";
  const int64_t na = numa_of(hwloc_get_non_io_ancestor_obj(topo, a));
  const int64_t nb = numa_of(hwloc_get_non_io_ancestor_obj(topo, b));
  return na >= 0 && na == nb ? "NODE" : "SYS";
}

void probe_topology(Json& probe) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    add_probe_note(probe, "topology", "hwloc_topology_init failed; sockets, cores and NUMA nodes come from /sys");
    return;
  }
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> topo(raw, hwloc_topology_destroy);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(raw) != 0) {
    add_probe_note(probe, "topology", "hwloc_topology_load failed; sockets, cores and NUMA nodes come from /sys");
    return;
  }
  Json& cpu = probe["cpu"];
  cpu["sockets"] = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PACKAGE);
  cpu["cores"] = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_CORE);
  cpu["topology_source"] = "hwloc";
  Json numa = Json::array();
  const int nodes = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nodes; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(raw, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    numa.push_back(Json{{"node", n->os_index},
                        {"memory_bytes", n->attr ? Json(n->attr->numanode.local_memory) : Json(nullptr)},
                        {"cpus", cpu_list(n->cpuset)},
                        {"cpu_count", n->cpuset ? hwloc_bitmap_weight(n->cpuset) : 0}});
  }
  if (!numa.empty()) probe["numa"] = numa;
  probe["versions"]["hwloc"] = HWLOC_VERSION;

  // Every device with a PCI address, to measure the GPUs against.
  struct Peer {
    std::string name, kind;
    hwloc_obj_t obj;
  };
  std::vector<Peer> peers;
  for (const char* list : {"nics", "rdma"}) {
    if (!probe.contains(list) || !probe[list].is_array()) continue;
    for (const auto& d : probe[list]) {
      if (!d.contains("pci_address") || !d["pci_address"].is_string()) continue;
      if (hwloc_obj_t o = pci_object(raw, d["pci_address"].get<std::string>())) {
        peers.push_back({d.value("name", d.value("device", "")), list == std::string("nics") ? "net" : "rdma", o});
      }
    }
  }
  Json affinity = Json::array();
  if (probe.contains("gpus") && probe["gpus"].is_array()) {
    for (auto& g : probe["gpus"]) {
      if (!g.contains("pci_address") || !g["pci_address"].is_string()) continue;
      hwloc_obj_t o = pci_object(raw, g["pci_address"].get<std::string>());
      if (!o) {
        add_probe_note(probe, "topology", fmt::format("GPU {} at {} is not in hwloc's PCI tree", g.value("index", -1),
                                                      g["pci_address"].get<std::string>()));
        continue;
      }
      hwloc_obj_t host = hwloc_get_non_io_ancestor_obj(raw, o);
      const int64_t node = numa_of(host);
      g["numa_node"] = node >= 0 ? Json(node) : Json(nullptr);
      Json near = Json::array();
      for (const auto& p : peers) near.push_back(Json{{"name", p.name}, {"kind", p.kind}, {"path", distance(raw, o, p.obj)}});
      affinity.push_back(Json{{"gpu", g.value("index", -1)},
                              {"pci_address", g["pci_address"]},
                              {"numa_node", g["numa_node"]},
                              {"cpus", host ? cpu_list(host->cpuset) : ""},
                              {"nics", near}});
    }
  }
  probe["affinity"] = affinity;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::ProbeSection, "topology",
                   (::acceltune::ProbeSection{"hwloc: packages, cores, NUMA nodes, GPU and NIC affinity", 60,
                                              ::acceltune::probe_topology}))
