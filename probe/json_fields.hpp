// Reading a probe's JSON without exceptions: a missing or mistyped field is a neutral value.
#pragma once

#include <cstdint>
#include <string>

#include "probe/fingerprint.hpp"

namespace acceltune {

// j[key] as an array; an empty one when absent or not an array.
inline const Json& json_list(const Json& j, const char* key) {
  static const Json empty = Json::array();
  return j.is_object() && j.contains(key) && j[key].is_array() ? j[key] : empty;
}
inline int64_t json_int(const Json& j, int64_t fallback = -1) {
  return j.is_number() ? static_cast<int64_t>(j.get<double>()) : fallback;
}
inline std::string json_str(const Json& j) { return j.is_string() ? j.get<std::string>() : ""; }

}  // namespace acceltune
