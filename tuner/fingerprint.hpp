// The hardware and software fingerprint stored with every study, so results from different
// machines can be compared side by side.
#pragma once

#include "tuner/value.hpp"

namespace acceltune {

// host, CPU model, logical cores (and those this process may use), memory, kernel, OS,
// compiler, acceltune version; plus "id", a short hash of the hardware fields.
Json probe_fingerprint();

std::string acceltune_version();

}  // namespace acceltune
