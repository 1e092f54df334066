// One grammar for every duration a user gives (time limits, timeouts, caps, waits): "90s", "2m",
// "1h", "1m30s", "1.5m" or plain seconds ("45", "0.5").
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace acceltune {

// The accepted forms, as help texts and errors name them.
inline constexpr const char* kDurationForms = "90s, 2m, 1h, 1m30s or plain seconds";

// Seconds; nullopt when the text is none of the forms, negative or not finite, or zero unless
// `zero_allowed` (where 0 means "off").
std::optional<double> parse_duration(std::string_view text, bool zero_allowed = false);

// A stage's end under a command's time limit; none: no limit.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// Whether `deadline` has passed, or would have after `ahead` more seconds.
bool deadline_passed(const Deadline& deadline, double ahead = 0);

// Whether round `round` (from 0) of an interleaved measurement may start under `deadline`, the
// previous round having taken `last_round_seconds`: the first always does; no round starts after
// the deadline, nor, once two are done, one that would end after it.
bool round_may_start(const Deadline& deadline, int round, double last_round_seconds);

}  // namespace acceltune
