// The out-of-band exchange between the verbs kernel and its far end over their socket pair:
// fixed-size records with a deadline (EndInfo, status reports, commands), the commands after the
// exchange, and where the far end finds its socket. The far end itself and these functions are in
// verbs_far_end.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/socket_channel.hpp"
#include "tuner/expected.hpp"

namespace acceltune::verbs {

constexpr double kStepTimeoutSeconds = 10.0;
// The descriptor number of the far end's socket in the far end.
constexpr int kFarEndFd = 3;

// Blocking exchange of fixed-size records over the socketpair, with a deadline.
Status send_all(int fd, const void* p, size_t n);
Status recv_all(int fd, void* p, size_t n, double timeout_seconds);

// Messages between the two ends after the exchange of EndInfo.
enum Cmd : int32_t { kCmdCheck = 1, kCmdQuit = 2 };

}  // namespace acceltune::verbs
