// The tcp family: TCP streams between two hosts, two network namespaces or over loopback; its
// host-wide settings leave as a reviewed script.
#include "kernels/shared/netns.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/family.hpp"

namespace acceltune {
namespace {

// Whether this node can make network namespaces, the tcp study's way to cross a real link.
void tcp_observe(NodeFacts& facts, bool may_try) {
  facts.observed["netns"] = false;
  if (!may_try) {
    facts.observed["netns_why"] = "not tried";
  } else if (!may_manage_netns()) {
    facts.observed["netns_why"] = "network namespaces need root (or CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  } else {
    auto pair = NetnsPair::create();
    facts.observed["netns"] = pair.has_value();
    if (!pair) facts.observed["netns_why"] = pair.error().message;
  }
}

FamilyRole tcp_role(const NodeFacts& facts) {
  FamilyRole r;
  r.what = "TCP streams: MTU and congestion control for jobs; buffers, streams and write size as advice";
  FamilyStudy s{"tcp", "tcp-stream", nullptr, {}, 2, 10};
  if (facts.has("netns")) {
    s.args = {"--netns"};
    r.what += " (between two network namespaces)";
  } else {
    r.what += fmt::format(" (over loopback: {})", facts.text("netns_why"));
  }
  r.studies.push_back(s);
  return r;
}

// Physical NICs as driver, speed and MTU (virtual ones come and go: veth, bridges, ifb), sorted.
Json nics_fingerprint(const Json& probe) {
  std::vector<Json> nics;
  const Json list = field_of(probe, "nics");
  for (const auto& n : list.is_array() ? list : Json::array()) {
    if (field_of(n, "virtual") == Json(true)) continue;
    nics.push_back(Json{{"driver", field_of(n, "driver")}, {"speed_mbps", field_of(n, "speed_mbps")}, {"mtu", field_of(n, "mtu")}});
  }
  return sorted_items(std::move(nics));
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "tcp",
                   (::acceltune::FamilyInfo{
                       .what = "TCP streams: MTU and congestion control for jobs; buffers, streams and write size as advice",
                       .order = 20,
                       .kernels = {"tcp-stream"},
                       .spaces = {"tcp-stream"},
                       .observe = ::acceltune::tcp_observe,
                       .bringup = ::acceltune::tcp_role,
                       .bundle_files = {{.name = "tcp-settings.sh",
                                         .export_format = "tcp-script",
                                         .when_empty = "no tcp-stream study finished",
                                         .script = true}},
                       .links = {"loopback", "veth", "nic"},
                       .far_ends = {"tcp-stream"},
                       .exports = {"tcp-script"},
                       .fingerprint = {"nics"}}))
ACCELTUNE_REGISTER(::acceltune::FingerprintField, "nics",
                   (::acceltune::FingerprintField{"physical NICs: driver, speed, MTU", 10, ::acceltune::nics_fingerprint}))
