// The OMPI_MCA_* variables spaces bind, one row each (tuner/env_params.hpp): built on every build,
// MPI or not, so the mpi-coll spaces are read against it anywhere and `acceltune spaces --params
// openmpi` prints it. Names, algorithms and the values Open MPI takes when a variable is unset
// follow `ompi_info --all` of Open MPI 4.1; the coll/tuned algorithms count only with
// coll_tuned_use_dynamic_rules, which the kernel sets.
#include "tuner/env_params.hpp"

namespace acceltune {
namespace {

struct TunedCollective {
  const char* name;
  std::vector<std::string> algorithms;  // ignore first: Open MPI's own choice per size
};

NativeTable ompi_env_rows() {
  NativeTable t = {
      [] {
        NativeParam p = env_choice("OMPI_MCA_pml", {"ob1", "ucx", "cm", "v", "monitoring"}, "ob1",
                                   "point-to-point messaging layer: ob1 over the btl transports, or UCX (unset: by "
                                   "priority; Debian's configuration leaves out ucx, so ob1)");
        p.list = true;
        return p;
      }(),
      [] {
        NativeParam p = env_choice("OMPI_MCA_btl", {"self", "vader", "sm", "tcp", "openib", "uct", "smcuda"}, "",
                                   "byte transfer layers ob1 may use");
        p.list = true;
        return p;
      }(),
      env_integer("OMPI_MCA_coll_tuned_use_dynamic_rules", 0, 1, "", "0",
                  "1: coll/tuned follows forced algorithms and rules files (the kernel sets it)"),
  };
  const TunedCollective collectives[] = {
      {"allreduce",
       {"ignore", "basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring", "rabenseifner"}},
      {"allgather", {"ignore", "linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"}},
      {"alltoall", {"ignore", "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"}},
      {"bcast",
       {"ignore", "basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial",
        "scatter_allgather", "scatter_allgather_ring"}},
      {"reduce", {"ignore", "linear", "chain", "pipeline", "binary", "binomial", "in-order_binary", "rabenseifner"}},
      {"reduce_scatter", {"ignore", "non-overlapping", "recursive_halving", "ring", "butterfly"}},
  };
  for (const auto& c : collectives) {
    const std::string var = std::string("OMPI_MCA_coll_tuned_") + c.name + "_algorithm";
    t.push_back(env_choice(var, c.algorithms, "ignore",
                           fmt::format("coll/tuned's {} algorithm; ignore keeps Open MPI's own choice per size", c.name)));
    t.push_back(env_integer(var + "_segmentsize", 0, int64_t{1} << 30, "bytes", "0",
                            fmt::format("segment size of the forced {} algorithm, where it segments (0: unsegmented)",
                                        c.name)));
  }
  return t;
}

}  // namespace

ACCELTUNE_REGISTER_ENV_TABLE("openmpi", "Open MPI", "OMPI_MCA_", ompi_env_rows());

}  // namespace acceltune
