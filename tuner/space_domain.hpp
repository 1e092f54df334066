// Private to the space's sources (space.cpp, space_json.cpp): a param's domain in words, for
// the messages of both the space file's reader and the space's operations.
#pragma once

#include <string>

#include "tuner/space.hpp"

namespace acceltune {

// "int 1..64" for long int and pow2 axes, else "kind [v1, v2, ...]".
std::string describe_domain(const Param& p);

}  // namespace acceltune
