// The mpi family: MPI collectives under mpirun, Open MPI's algorithm, segment and messaging
// layer; per-size choices leave as Open MPI's rules file.
#include <algorithm>
#include <cstdlib>

#include "kernels/shared/child_process.hpp"
#include "tuner/family.hpp"

namespace acceltune {
namespace {

void mpi_observe(NodeFacts& facts, bool) {
  const char* mpirun = std::getenv("ACCELTUNE_MPIRUN");
  facts.observed["mpirun"] = find_on_path(mpirun ? mpirun : "mpirun").has_value();
}

FamilyRole mpi_role(const NodeFacts& facts) {
  const int ranks = std::max(2, facts.cores);  // never a one-rank allreduce
  FamilyRole r;
  r.what = fmt::format("MPI_Allreduce at {} ranks: Open MPI's algorithm, segment and messaging layer", ranks);
  if (!facts.has("mpirun")) {
    r.skipped = "mpirun is not on PATH (Debian: openmpi-bin)";
    return r;
  }
  // The sizes a job's collectives span, four of them: each size is a verdict the plan must pass, and
  // a delivered round runs every size through mpirun. The largest share of the time: its plain
  // client starts a job per run.
  r.studies.push_back(FamilyStudy{"mpi", "mpi-allreduce",
                                  Json{{"ranks", ranks}, {"sizes", Json::array({"4K", "32K", "256K", "1M"})}}, {}, 5, 20});
  return r;
}

// Open MPI reads UCX_* too when its plan runs the ucx messaging layer.
bool mpi_also_reads(const EnvVars& plan, const std::string& var) {
  const bool pml_ucx = std::find(plan.begin(), plan.end(), std::make_pair(std::string("OMPI_MCA_pml"),
                                                                          std::string("ucx"))) != plan.end();
  return pml_ucx && var.rfind("UCX_", 0) == 0;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "mpi",
                   (::acceltune::FamilyInfo{
                       .what = "MPI collectives under mpirun: Open MPI's algorithm, segment and messaging layer",
                       .order = 40,
                       .kernels = {"mpi-coll"},
                       .spaces = {"mpi-allreduce"},
                       .observe = ::acceltune::mpi_observe,
                       .bringup = ::acceltune::mpi_role,
                       .env_prefixes = {"OMPI_MCA_"},
                       .also_reads = ::acceltune::mpi_also_reads,
                       .bundle_files = {{.name = "ompi-rules.conf",
                                         .plan_format = "ompi-rules",
                                         .when_empty = "the MPI plan keeps Open MPI's own per-size choices: nothing to "
                                                       "load"}},
                       .links = {"host-memory"}}))
