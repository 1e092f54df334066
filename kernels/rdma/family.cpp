// The rdma family: RDMA verbs between two processes over RC queue pairs.
#include "tuner/family.hpp"
#include "probe/fingerprint.hpp"

namespace acceltune {
namespace {

FamilyRole rdma_role(const NodeFacts& facts) {
  FamilyRole r{.what = "RDMA verbs: queue depths, inline size, path MTU, operations", .skipped = facts.without_rdma()};
  if (!r.skipped.empty()) return r;
  for (const char* s : {"verbs", "verbs-read", "verbs-send", "verbs-write-lat"}) r.studies.push_back(FamilyStudy{"rdma", s});
  return r;
}

// Per device, vendor and part id and per port link layer, active MTU and rate; sorted.
Json rdma_fingerprint(const Json& probe) {
  std::vector<Json> devices;
  const Json list = field_of(probe, "rdma");
  for (const auto& d : list.is_array() ? list : Json::array()) {
    Json ports = Json::array();
    const Json dp = field_of(d, "ports");
    for (const auto& p : dp.is_array() ? dp : Json::array()) {
      ports.push_back(Json{{"link_layer", field_of(p, "link_layer")},
                           {"active_mtu", field_of(p, "active_mtu")},
                           {"rate_gbps", field_of(p, "rate_gbps")}});
    }
    devices.push_back(Json{{"vendor_id", field_of(d, "vendor_id")}, {"vendor_part_id", field_of(d, "vendor_part_id")},
                           {"ports", ports}});
  }
  return sorted_items(std::move(devices));
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "rdma",
                   (::acceltune::FamilyInfo{.what = "RDMA verbs: queue depths, inline size, path MTU, operations",
                                            .order = 70,
                                            .kernels = {"verbs"},
                                            .spaces = {"verbs", "verbs-read", "verbs-send", "verbs-write-lat"},
                                            .bringup = ::acceltune::rdma_role,
                                            .links = {"rdma"},
                                            .fingerprint = {"rdma"}}))
ACCELTUNE_REGISTER(::acceltune::FingerprintField, "rdma",
                   (::acceltune::FingerprintField{"RDMA devices: vendor, part, per port link layer, MTU, rate", 20,
                                                  ::acceltune::rdma_fingerprint}))
