// What the nccl kernel knows without NCCL: its collectives (the rows of tuner/collectives.hpp it
// runs), the bus bandwidth factors of nccl-tests, the sizes each collective moves, and which
// algorithm/protocol choices a GPU cannot run. Built on every machine so it is tested where no
// GPU is.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/collectives.hpp"

namespace acceltune {

using NcclOp = CollectiveOp;

// The collectives the nccl kernel runs, by name (to_string(NcclOp) is the row's name).
std::optional<NcclOp> nccl_op_from_string(std::string_view name);
const std::vector<std::string>& nccl_op_names();

// busbw = algbw x factor (nccl-tests): 2(n-1)/n allreduce; (n-1)/n allgather, reduce_scatter,
// alltoall; 1 broadcast, reduce, sendrecv.
double nccl_busbw_factor(NcclOp op, int nranks);

// The message size a collective is measured at: `bytes` rounded down to whole float elements,
// and to a multiple of nranks elements where the buffer is split between ranks. As in
// nccl-tests, `bytes` is the larger buffer: the gathered output of allgather, the input of
// reduce_scatter, the whole send buffer of alltoall.
uint64_t nccl_effective_bytes(NcclOp op, uint64_t bytes, int nranks);

// The algorithms and protocols NCCL_ALGO / NCCL_PROTO may name (one value each, or "default").
const std::vector<std::string>& nccl_algorithms();
const std::vector<std::string>& nccl_protocols();

struct NcclHardware {
  bool multicast = false;  // NVLink SHARP through NVSwitch on every GPU of the node, which NVLS needs
  int compute_major = 0;   // the oldest GPU's
  bool collnet = false;    // a CollNet (SHARP) network plugin
  int nodes = 1;
  int ranks_per_node = 1;
};

// Why this algorithm/protocol pair cannot run on this hardware for this collective; empty when
// it can. The static rules (which collectives have which algorithms) are in the spaces as
// constraints too; this adds what depends on the machine.
std::string nccl_hardware_excludes(NcclOp op, const std::string& algo, const std::string& proto,
                                   const NcclHardware& hw);

// How one figure is made of the ranks' times, as nccl-tests' -a: the mean over the ranks (its
// default, so figures compare with nccl-tests') or the slowest rank. The space field
// "rank_time" ("mean" or "slowest") chooses.
enum class RankTime { mean, slowest };
std::optional<RankTime> nccl_rank_time_from_string(std::string_view name);
struct RankTimes {
  double mean = 0, slowest = 0;
};
RankTimes nccl_combine_rank_times(const std::vector<double>& seconds);
// What the value of a measurement is, for best.json and the tables.
std::string nccl_value_is(RankTime chosen, bool busbw);

// The communicator's rank count from the space fields: "ranks" (a number, or "gpus": one rank
// per GPU, the default) and "nodes". On one node "gpus" counts this node's GPUs; across nodes it
// counts "gpus_per_node" on each, since this node cannot count the others' (and every rank checks
// the count against what its launcher started). 0 with `why` set when the fields do not say.
int nccl_rank_count(const nlohmann::json& space_fields, int local_gpus, std::string* why);

// Why a communicator of `ranks` ranks has nothing to tune (empty when it has something): NCCL
// skips algorithm selection for one rank and never asks a tuner about it.
std::string nccl_nothing_to_tune(int ranks);

// Who a rank is, from its launcher's variables (Open MPI, MPICH/Hydra, Slurm); -1 where unset.
struct LauncherIdentity {
  int rank = -1, local_rank = -1, world_size = -1;
};
LauncherIdentity nccl_launcher_identity(const char* (*get)(const char*));
// The GPU of a rank: its local rank modulo the devices it sees (a launcher such as Slurm may
// narrow CUDA_VISIBLE_DEVICES to one GPU per rank, whose index is then 0).
int nccl_device_for(int local_rank, int visible_devices);

// The launcher family, from what `LAUNCHER --version` prints: how it forwards variables.
enum class LauncherKind { open_mpi, hydra, other };
LauncherKind nccl_launcher_kind(const std::string& version_text);
// The arguments that make the launcher give every rank these variables of this process (NCCL
// requires every rank to run with the same NCCL_ALGO, NCCL_PROTO, ...): "-x NAME" for Open MPI,
// "-genvlist A,B" for Hydra; none for others (srun exports the environment by default).
std::vector<std::string> nccl_forward_env_args(LauncherKind kind, const std::vector<std::string>& names);

// Env-bound params cannot leave a variable unset, so "default" (or an empty value) stands for
// NCCL's own choice: this unsets every such NCCL_* variable of the process before NCCL reads them.
void nccl_unset_default_env();

}  // namespace acceltune
