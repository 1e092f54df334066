// Export plans. A job cannot change every param per message size: a rules file or a tuner table
// selects some per size range, the rest are read once per job. The plan of a study is one
// job-wide assignment chosen jointly over all its sizes, plus per-size choices conditioned on it;
// every exporter, `exec`, the loader and `verify` load that one plan.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tuner/best.hpp"
#include "tuner/recommend.hpp"

namespace acceltune {

// Every param's scope, from the export formats' declarations (EmitterInfo::carries): per size
// when a format carries it per size, job-wide when one carries it for the job, else the
// application's.
std::map<std::string, Scope> param_scopes(const std::string& kernel, const Json& default_config,
                                          const std::map<std::string, std::string>& env);

// The job-wide part of a config.
Json job_part(const Json& config, const std::map<std::string, Scope>& scopes);

// Whether a plan may carry `config`: a space with params a job loads (job-wide or per size) and
// params only the application sets (tcp-stream's streams and write size) varies only the former
// in its plan, its certification and its delivery, so the certified gain is what a job can load;
// the search's best over all params is advice for the application. A space whose params are all
// the application's (host-copy) is advice as a whole and is certified as it is.
bool plan_may_carry(const Json& config, const Json& default_config, const std::map<std::string, Scope>& scopes);

// The application's params of `config` that differ from the defaults, in a space that also has
// params a job loads ("streams=8 write_size=1M"); empty otherwise.
std::string application_advice(const Json& config, const Json& default_config,
                               const std::map<std::string, Scope>& scopes);

// Per size where the search's best differs from the defaults in the application's params: "at 64K:
// streams=8 write_size=1048576 (2.90x the defaults, observed in the search)". Advice measured
// inside acceltune, never a gain a job gets.
std::vector<std::string> application_advice_lines(const BestTable& best);

// `config` with its job-wide params replaced by `job`'s and everything else at the defaults:
// the job-wide assignment with the library's own per-size choices.
Json with_job(const Json& default_config, const Json& job);

// The job-wide assignments measured by full-effort trials at every size, best first by the
// geometric mean over sizes of each one's best gain over the default there; the default's own
// job-wide assignment is always among them.
std::vector<Json> joint_candidates(const Space& space, const std::vector<Trial>& trials,
                                   const std::vector<uint64_t>& sizes, const std::map<std::string, Scope>& scopes);

// Per size, the full-effort trials measured ok there whose job-wide part is `job` and that a plan
// may carry (plan_may_carry), the recommended first (by `ranking` when given, else by value).
std::vector<const Trial*> trials_with_job(const Space& space, const std::vector<Trial>& trials, uint64_t bytes,
                                          const Json& job, const std::map<std::string, Scope>& scopes,
                                          const Ranking* ranking);

// The uncertified plan: the first joint candidate, and per size the recommended trial with that
// job-wide part (the defaults' per-size choice where none measured ok).
void choose_plan(BestTable& best, const Space& space, const std::vector<Trial>& trials, const Ranking* ranking);

// What a job's environment gets from the plan, in order: the job-wide variables, the variables a
// chosen value needs to run (Param::needs), and the switches that make the job read the per-size
// files (with their paths in the study's plan/ folder). Comments say what is left to the library
// and the launcher's advice. Never a per-size param as a variable; never acceltune's hygiene.
// A variable measured on one path that governs another (a family that reads one environment for
// every path, as UCX does, or a value a job across nodes cannot run with: UCX_TLS=posix) is held
// back: every exporter writes it commented out with why, `exec` and the loader do not set it, and
// only measurements on the study's own path (`verify`, the bring-up bundle, which measures every
// path) load it.
struct HeldVar {
  std::string var, value, why;
};
struct PlanEnv {
  std::vector<std::pair<std::string, std::string>> vars;
  std::vector<HeldVar> held;
  std::vector<std::string> comments;
  // Per-size files the switches name: format, path.
  std::vector<std::pair<std::string, std::string>> files;
};
Expected<PlanEnv> plan_env(const BestTable& best);
// What a job on the study's own path loads: the plan's variables and those held back.
std::vector<std::pair<std::string, std::string>> own_path_env(const PlanEnv& pe);

// Writes the per-size files plan_env names (atomically; unchanged files are left alone).
Status write_plan_files(const BestTable& best);

// The space's pinned context: every single-valued env param (UCX_TLS=tcp of ucx-tcp). Both arms
// of a delivered comparison set it.
std::vector<std::pair<std::string, std::string>> pinned_env(const Json& study);

}  // namespace acceltune
