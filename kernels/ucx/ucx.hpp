// The two ends of the ucx kernel. The initiator (the kernel, in the trial's worker) and the
// responder (a process forked from the worker, or from `acceltune serve` for --peer) talk over a
// control stream of JSON lines: worker addresses, buffer keys, commands and the check of the
// received data. The data itself moves over UCX.
#pragma once

#include <string>

#include "kernels/shared/control_auth.hpp"
#include "tuner/expected.hpp"
#include "tuner/value.hpp"

namespace acceltune::ucx {

// Runs the responder on a connected control session until the initiator quits or goes away (or
// a message fails its check: control.broken() says so after). It calls ucp_init, so the process
// must already have the trial's UCX_* environment. Returns the exit code for the process.
int run_responder(ControlChannel& control);

// How the kernel reaches a responder on another host (--peer HOST:PORT): an authenticated
// control session (owning its connection) whose far end runs run_responder with these UCX_*
// variables set. Filled in by the
// peer-server glue when it is built; empty otherwise.
using ConnectPeer = Expected<ControlChannel> (*)(const std::string& host_port, const Json& env, double timeout_seconds);
ConnectPeer& connect_peer_hook();

}  // namespace acceltune::ucx
