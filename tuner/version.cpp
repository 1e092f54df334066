// The version the build set (ACCELTUNE_VERSION).
#include "tuner/version.hpp"

#ifndef ACCELTUNE_VERSION
#define ACCELTUNE_VERSION "0.0.0"
#endif

namespace acceltune {

std::string acceltune_version() { return ACCELTUNE_VERSION; }

}  // namespace acceltune
