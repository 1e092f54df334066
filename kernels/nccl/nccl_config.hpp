// The communicator settings of an nccl measurement (the space's native params) as ncclConfig_t
// fields. NCCL added fields release by release (minCTAs/maxCTAs/cgaClusterSize in 2.17,
// CTAPolicy and nvlsCTAs in 2.27, nChannelsPerNetPeer in 2.28); this builds against the header
// of any NCCL from 2.17 on and says which params the header or the running library cannot take.
#pragma once

#include <nccl.h>

#include <nlohmann/json.hpp>
#include <string>

namespace acceltune {

// Sets the fields of the params in `params` (name -> integer; -1 leaves a field to NCCL).
// `runtime_version` is ncclGetVersion()'s. Returns why a param that is set cannot be applied,
// naming the param and the NCCL it needs; empty when every set param was applied.
std::string nccl_apply_config(const nlohmann::json& params, int runtime_version, ncclConfig_t& config);

// The fields of `config` this header has, by NCCL's names (minCTAs, maxCTAs, ...): what a rank
// passed to ncclCommInitRankConfig, for the measurement's details.
nlohmann::json nccl_config_fields(const ncclConfig_t& config);

// The NCCL version code the header was built from (NCCL_VERSION_CODE).
int nccl_header_version();

}  // namespace acceltune
