// acceltune's version, as the build set it.
#pragma once

#include <string>

namespace acceltune {

std::string acceltune_version();

}  // namespace acceltune
