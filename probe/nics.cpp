// Probe section "nics": the network interfaces from /sys/class/net (name, driver, speed, MTU,
// PCI address, NUMA node, PCIe link state). The loopback interface is left out; interfaces without a device
// (veth, bridges, ifb, tunnels) are marked virtual and do not count in the fingerprint.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "probe/util.hpp"
#include "probe/fingerprint.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

void probe_nics(Json& probe) {
  Json nics = Json::array();
  std::error_code ec;
  std::vector<fs::path> ifaces;
  for (const auto& e : fs::directory_iterator("/sys/class/net", ec)) ifaces.push_back(e.path());
  if (ec) {
    add_probe_note(probe, "nics", fmt::format("cannot read /sys/class/net: {}", ec.message()));
    return;
  }
  std::sort(ifaces.begin(), ifaces.end());
  for (const fs::path& dir : ifaces) {
    const std::string name = dir.filename().string();
    if (name == "lo") continue;
    Json n = Json::object();
    n["name"] = name;
    const fs::path device = dir / "device";
    const bool has_device = fs::exists(device, ec);
    n["virtual"] = !has_device;
    std::string driver;
    if (has_device) {
      const fs::path drv = fs::read_symlink(device / "driver", ec);
      if (!ec) driver = drv.filename().string();
    }
    n["driver"] = driver.empty() ? Json(nullptr) : Json(driver);
    // speed reads EINVAL (or -1) while the link is down or for virtual links.
    const int64_t speed = probe_util::to_int(read_first_line((dir / "speed").string()));
    n["speed_mbps"] = speed > 0 ? Json(speed) : Json(nullptr);
    const int64_t mtu = probe_util::to_int(read_first_line((dir / "mtu").string()));
    n["mtu"] = mtu > 0 ? Json(mtu) : Json(nullptr);
    n["operstate"] = read_first_line((dir / "operstate").string());
    const std::string pci = has_device ? probe_util::pci_address_of(device) : "";
    n["pci_address"] = pci.empty() ? Json(nullptr) : Json(pci);
    // The PCI function knows its node; a virtio NIC's own device does not.
    const int64_t node =
        pci.empty() ? -1 : probe_util::to_int(read_first_line("/sys/bus/pci/devices/" + pci + "/numa_node"));
    n["numa_node"] = node >= 0 ? Json(node) : Json(nullptr);
    n["pcie"] = probe_util::pcie_link_from_sysfs(pci);
    nics.push_back(std::move(n));
  }
  probe["nics"] = nics;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::ProbeSection, "nics",
                   (::acceltune::ProbeSection{"network interfaces from /sys/class/net", 20, ::acceltune::probe_nics}))
