// Param values and message sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/expected.hpp"

namespace acceltune {

using Json = nlohmann::ordered_json;

using Value = std::variant<int64_t, double, bool, std::string>;

// The canonical text of a value: integers in decimal, doubles in shortest round-trip form,
// bools as true/false, strings as they are. Keys and environment variables use this text.
std::string to_string(const Value& v);
Json to_json(const Value& v);
// Numeric view used by constraint expressions and models; strings have none.
bool is_numeric(const Value& v);
double to_double(const Value& v);
bool operator_less(const Value& a, const Value& b);

// "64K" -> 65536. Units K, M, G, T are powers of 1024; an optional trailing "B" or "iB" is
// accepted. Plain numbers are bytes.
Expected<uint64_t> parse_bytes(std::string_view text);
// "4K,64K,1M" or ranges "1K:1G:x4" (multiply) and "1K:8K:+1K" (add); mixed by commas.
Expected<std::vector<uint64_t>> parse_sizes(std::string_view text);
// 65536 -> "64K", 1536 -> "1536"; the shortest exact form. 0 prints as "-" (size-less kernels).
std::string format_bytes(uint64_t bytes);
// A gain and its interval, "2.47x [2.20, 2.77]"; an infinite upper bound prints as "inf".
std::string gain_interval_text(double ratio, double low, double high);
// What a ratio's interval says, in one word set: "faster" (above 1), "slower" (wholly below 1 and
// below `margin`), "within the no-harm margin" (below 1 but not below `margin`, the verdict's
// 0.97), else "no significant difference". An interval wholly below 1 is never "no difference".
std::string interval_meaning(double low, double high, double margin = 0.97);
// The parts with `sep` between them.
std::string join(const std::vector<std::string>& parts, const std::string& sep);

}  // namespace acceltune
