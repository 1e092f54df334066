// Cancellation of long commands (search, bench, bring-up): SIGINT, SIGTERM and SIGHUP set a flag
// that the study loop, the trial runner, certification and the measurement driver read, so a
// command stops within a sample, kills the trial in flight, keeps every finished trial and exits
// with 128 + the signal. A second signal ends the process at once (the default action), and the
// process guard (process_guard.hpp) still clears everything the command started.
#pragma once

#include <string>

namespace acceltune {

// Installs the handlers once; later calls do nothing.
void install_cancel_handlers();

// Whether a cancelling signal arrived (or request_cancel was called), and which (0: none).
bool cancel_requested();
int cancel_signal();

// For tests and for commands that stop themselves: as if `signal` had arrived, or not.
void request_cancel(int signal);
void clear_cancel();

// "SIGINT", "SIGKILL", ... ("signal 42" for others).
std::string signal_name(int sig);

}  // namespace acceltune
