// Entry points beside the study loop, registered by the backends that need them:
// - hidden modes of the binary (`acceltune __NAME ...`): the trial worker, one rank of a trial
//   that a launcher (mpirun) started, a transfer kernel's far end in a process of its own;
// - services that run until stopped (`acceltune serve`: the far end for --peer).
#pragma once

#include <functional>
#include <string>

#include "tuner/registry.hpp"
#include "tuner/value.hpp"

namespace acceltune {

struct HiddenMode {
  std::string description;
  // argv[0] is the binary, argv[1] the mode's name; returns the exit code.
  std::function<int(int argc, char** argv)> main;
};
using HiddenModeRegistry = Registry<HiddenMode>;

struct ServiceInfo {
  std::string description;
  // options: {"bind": "0.0.0.0", "port": 18515, "once": false, "link": ""}; returns the exit code.
  std::function<int(const Json& options)> run;
};
using ServiceRegistry = Registry<ServiceInfo>;

}  // namespace acceltune
