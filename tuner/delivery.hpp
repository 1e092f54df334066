// Delivered gains: a study's export plan loaded the way a job loads it, by a plain client of the
// kernel's family started the way users start it (an MPI program under mpirun with the rules file
// and the env file, ucx_perftest with the env file, acceltune-tcp-client after the reviewed
// script), measured interleaved with the library's defaults. A family registers its client under
// its kernel's name; a kernel without one is "not verified".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tuner/expected.hpp"
#include "tuner/registry.hpp"
#include "tuner/value.hpp"

namespace acceltune {

// One side of a delivered comparison.
struct DeliveryArm {
  std::string name;  // "defaults" or "plan"
  // The variables the job starts with: for the plan, exactly the env export's lines (job-wide
  // variables, the variables a config needs to run, the switch of a per-size file with its path);
  // for the defaults, only the space's pinned context (a single-valued param such as UCX_TLS=tcp).
  std::vector<std::pair<std::string, std::string>> env;
  // The job-wide assignment by param name (the defaults arm: the library defaults), for the
  // settings a job gets from a reviewed script rather than the environment (MTU, sysctls).
  Json job = Json::object();
};

// A client's environment: this process's, without any variable a param of the study sets and
// without acceltune's own measurement hygiene (hygiene_env_names), plus the arm's variables.
std::vector<std::string> job_environment(const Json& study, const DeliveryArm& arm);

// Variables acceltune sets in its own process for its measurements (UCX_HANDLE_ERRORS=none) that
// must never reach a job. set_hygiene_env sets one unless the user already did, and remembers it.
void set_hygiene_env(const char* name, const char* value);
std::vector<std::string> hygiene_env_names();

// A client ready to measure (a pair of namespaces made once, a free port found once).
class DeliverySession {
 public:
  virtual ~DeliverySession() = default;
  // Measures every size once under `arm`: a value per size, higher is better (a bandwidth). A
  // size that failed is absent; when all fail, the error says why.
  virtual Expected<std::map<uint64_t, double>> measure(const DeliveryArm& arm, const std::vector<uint64_t>& sizes) = 0;
};

struct DeliveryClient {
  std::string description;  // how the job is started, one line ("a plain MPI_Allreduce timer under mpirun ...")
  // `study` is study.json (space, workload with operation and ranks). A missing tool is a
  // runtime error of one line that names the Debian package to install.
  std::function<Expected<std::unique_ptr<DeliverySession>>(const Json& study)> open;
};
using DeliveryRegistry = Registry<DeliveryClient>;  // by kernel name

}  // namespace acceltune
