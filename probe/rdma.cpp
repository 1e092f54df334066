// Probe section "rdma": RDMA devices through libibverbs (device, firmware, PCI address, NUMA
// node, PCIe link state; per port its state, active MTU, link layer and rate). Built with ACCELTUNE_WITH_VERBS;
// a machine with the library and no device gets an empty list.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "probe/util.hpp"
#include "probe/fingerprint.hpp"

namespace acceltune {
namespace {

// The lanes of an active_width code and the per-lane signalling rate (Gb/s) of an
// active_speed code, as the InfiniBand PortInfo attribute encodes them.
int lanes(uint8_t width) {
  switch (width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 0;
  }
}

double lane_gbps(uint8_t speed) {
  switch (speed) {
    case 1: return 2.5;
    case 2: return 5.0;
    case 4: return 10.0;
    case 8: return 10.3125;
    case 16: return 14.0625;
    case 32: return 25.78125;
    case 64: return 53.125;
    case 128: return 106.25;
    default: return 0;
  }
}

// The data rate of a lane after its line encoding (8b/10b up to QDR, 64b/66b from FDR10, and
// FEC on the PAM4 lanes of HDR and NDR), Gb/s.
double lane_data_gbps(uint8_t speed) {
  switch (speed) {
    case 1: return 2.0;
    case 2: return 4.0;
    case 4: return 8.0;
    case 8: return 10.0;
    case 16: return 13.64;
    case 32: return 25.0;
    case 64: return 50.0;
    case 128: return 100.0;
    default: return 0;
  }
}

std::string link_layer_name(uint8_t l) {
  switch (l) {
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    default: return "unspecified";
  }
}

int mtu_bytes(ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << static_cast<int>(m) : 0; }

void probe_rdma(Json& probe) {
  Json devices = Json::array();
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    // ENOSYS: no kernel support (no /sys/class/infiniband); other errors are worth a note.
    if (errno != ENOSYS && errno != 0) add_probe_note(probe, "rdma", fmt::format("ibv_get_device_list failed: {}", std::strerror(errno)));
    probe["rdma"] = devices;
    return;
  }
  for (int i = 0; i < n; ++i) {
    ibv_device* dev = list[i];
    Json d = Json::object();
    const std::string name = ibv_get_device_name(dev);
    d["device"] = name;
    const std::string sys = std::string("/sys/class/infiniband/") + name + "/device";
    const std::string pci = probe_util::pci_address_of(sys);
    d["pci_address"] = pci.empty() ? Json(nullptr) : Json(pci);
    const int64_t node = probe_util::to_int(read_first_line(sys + "/numa_node"));
    d["numa_node"] = node >= 0 ? Json(node) : Json(nullptr);
    d["pcie"] = probe_util::pcie_link_from_sysfs(pci);
    ibv_context* ctx = ibv_open_device(dev);
    if (!ctx) {
      add_probe_note(probe, "rdma", fmt::format("cannot open {}: {}", name, std::strerror(errno)));
      devices.push_back(std::move(d));
      continue;
    }
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) == 0) {
      d["firmware"] = attr.fw_ver;
      d["vendor_id"] = attr.vendor_id;
      d["vendor_part_id"] = attr.vendor_part_id;
      d["hw_ver"] = attr.hw_ver;
      d["max_qp"] = attr.max_qp;
      Json ports = Json::array();
      for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, p, &pa) != 0) {
          add_probe_note(probe, "rdma", fmt::format("cannot query {} port {}", name, p));
          continue;
        }
        const double rate = lanes(pa.active_width) * lane_gbps(pa.active_speed);
        const double data = lanes(pa.active_width) * lane_data_gbps(pa.active_speed);
        ports.push_back(Json{{"port", p},
                             {"state", ibv_port_state_str(pa.state)},
                             {"active_mtu", mtu_bytes(pa.active_mtu)},
                             {"max_mtu", mtu_bytes(pa.max_mtu)},
                             {"link_layer", link_layer_name(pa.link_layer)},
                             {"rate_gbps", rate > 0 ? Json(rate) : Json(nullptr)},
                             {"data_rate_gbps", data > 0 ? Json(data) : Json(nullptr)}});
      }
      d["ports"] = ports;
    } else {
      add_probe_note(probe, "rdma", fmt::format("cannot query {}", name));
    }
    ibv_close_device(ctx);
    devices.push_back(std::move(d));
  }
  ibv_free_device_list(list);
  probe["rdma"] = devices;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::ProbeSection, "rdma",
                   (::acceltune::ProbeSection{"RDMA devices through libibverbs", 30, ::acceltune::probe_rdma}))
