// The definitions behind kernels/nccl/nccl_config.hpp: the communicator settings of an nccl
// measurement (the space's native params) as ncclConfig_t fields.
#include "kernels/nccl/nccl_config.hpp"

#include <cstdint>

namespace acceltune {
namespace {

// NCCL's version codes (NCCL_VERSION(2, minor, patch) from 2.9 on).
constexpr int version_code(int minor) { return 20000 + minor * 100; }

std::string text_of(int code) { return "2." + std::to_string((code % 10000) / 100); }

}  // namespace

int nccl_header_version() { return NCCL_VERSION_CODE; }

nlohmann::json nccl_config_fields(const ncclConfig_t& config) {
  nlohmann::json j = {{"blocking", config.blocking},
                      {"cgaClusterSize", config.cgaClusterSize},
                      {"minCTAs", config.minCTAs},
                      {"maxCTAs", config.maxCTAs}};
#if NCCL_VERSION_CODE >= 22700
  j["nvlsCTAs"] = config.nvlsCTAs;
  j["CTAPolicy"] = config.CTAPolicy;
#endif
#if NCCL_VERSION_CODE >= 22800
  j["nChannelsPerNetPeer"] = config.nChannelsPerNetPeer;
#endif
  return j;
}

std::string nccl_apply_config(const nlohmann::json& params, int runtime_version, ncclConfig_t& config) {
  auto set = [&](const char* name) -> int64_t {
    if (!params.contains(name) || !params[name].is_number_integer()) return -1;
    return params[name].get<int64_t>();
  };
  std::string why;
  // A param the header has no field for, or the running library does not read.
  auto need = [&](const char* name, int minor, bool in_header) -> bool {
    if (set(name) < 0) return false;
    const int code = version_code(minor);
    if (!in_header || runtime_version < code) {
      if (why.empty()) {
        why = std::string("param '") + name + "' needs NCCL " + text_of(code) + " or newer (this build's header is " +
              text_of(NCCL_VERSION_CODE) + ", the library " + text_of(runtime_version) + ")";
      }
      return false;
    }
    return true;
  };
  // `channels` pins the CTA count: both bounds at once.
  if (need("channels", 17, true) && set("channels") > 0) {
    config.minCTAs = config.maxCTAs = static_cast<int>(set("channels"));
  }
  if (need("min_ctas", 17, true)) config.minCTAs = static_cast<int>(set("min_ctas"));
  if (need("max_ctas", 17, true)) config.maxCTAs = static_cast<int>(set("max_ctas"));
  if (need("cga_cluster_size", 17, true)) config.cgaClusterSize = static_cast<int>(set("cga_cluster_size"));
#if NCCL_VERSION_CODE >= 22700
  if (need("nvls_ctas", 27, true)) config.nvlsCTAs = static_cast<int>(set("nvls_ctas"));
  if (need("cta_policy", 27, true)) config.CTAPolicy = static_cast<int>(set("cta_policy"));
#else
  need("nvls_ctas", 27, false);
  need("cta_policy", 27, false);
#endif
#if NCCL_VERSION_CODE >= 22800
  if (need("channels_per_net_peer", 28, true)) {
    config.nChannelsPerNetPeer = static_cast<int>(set("channels_per_net_peer"));
  }
#else
  need("channels_per_net_peer", 28, false);
#endif
  return why;
}

}  // namespace acceltune
