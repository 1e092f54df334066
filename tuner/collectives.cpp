// The collectives' table behind tuner/collectives.hpp, one row per collective.
#include "tuner/collectives.hpp"

namespace acceltune {
namespace {

// Open MPI 4.1's coll/tuned algorithms, by the number coll_tuned_<collective>_algorithm takes.
constexpr std::string_view kOmpiAllgather[] = {
    "ignore", "linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"};
constexpr std::string_view kOmpiAllreduce[] = {
    "ignore", "basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring", "rabenseifner"};
constexpr std::string_view kOmpiAlltoall[] = {
    "ignore", "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"};
constexpr std::string_view kOmpiBcast[] = {
    "ignore", "basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial",
    "scatter_allgather", "scatter_allgather_ring"};
constexpr std::string_view kOmpiReduceScatter[] = {
    "ignore", "non-overlapping", "recursive_halving", "ring", "butterfly"};

const CollectiveRow kRows[] = {
    {.op = CollectiveOp::allreduce,
     .name = "allreduce",
     .busbw = BusbwRule::all_ranks_twice,
     .split = false,
     .send = Share::whole,
     .recv = Share::whole,
     .root_only_receives = false,
     .expect = Expect::sum,
     .nccl_kernel = true,
     .mpi_name = "allreduce",
     .nccl_tuner_id = 4,
     .nccl_tuner_name = "allreduce",
     .ompi_coll_id = 2,
     .ompi_algorithms = kOmpiAllreduce,
     .mpich_cvar = "ALLREDUCE",
     .mpich_function = "Allreduce",
     .mpich_size_key = "avg_msg_size"},
    {.op = CollectiveOp::allgather,
     .name = "allgather",
     .busbw = BusbwRule::all_ranks,
     .split = true,
     .send = Share::block,
     .recv = Share::whole,
     .root_only_receives = false,
     .expect = Expect::gathered,
     .nccl_kernel = true,
     .mpi_name = "allgather",
     .nccl_tuner_id = 2,
     .nccl_tuner_name = "allgather",
     .ompi_coll_id = 0,
     .ompi_algorithms = kOmpiAllgather,
     .mpich_cvar = "ALLGATHER",
     .mpich_function = "Allgather",
     .mpich_size_key = "total_msg_size"},
    {.op = CollectiveOp::reduce_scatter,
     .name = "reduce_scatter",
     .busbw = BusbwRule::all_ranks,
     .split = true,
     .send = Share::whole,
     .recv = Share::block,
     .root_only_receives = false,
     .expect = Expect::scattered_sum,
     .nccl_kernel = true,
     .mpi_name = "reduce_scatter",
     .nccl_tuner_id = 3,
     .nccl_tuner_name = "reducescatter",
     .ompi_coll_id = 12,
     .ompi_algorithms = kOmpiReduceScatter,
     .mpich_cvar = "REDUCE_SCATTER",
     .mpich_function = "Reduce_scatter",
     .mpich_size_key = "total_msg_size"},
    {.op = CollectiveOp::broadcast,
     .name = "broadcast",
     .busbw = BusbwRule::one_to_one,
     .split = false,
     .send = Share::whole,
     .recv = Share::whole,
     .root_only_receives = false,
     .expect = Expect::root,
     .nccl_kernel = true,
     .mpi_name = "bcast",
     .nccl_tuner_id = 0,
     .nccl_tuner_name = "broadcast",
     .ompi_coll_id = 7,
     .ompi_algorithms = kOmpiBcast,
     .mpich_cvar = "BCAST",
     .mpich_function = "Bcast",
     .mpich_size_key = "avg_msg_size"},
    {.op = CollectiveOp::reduce,
     .name = "reduce",
     .busbw = BusbwRule::one_to_one,
     .split = false,
     .send = Share::whole,
     .recv = Share::whole,
     .root_only_receives = true,
     .expect = Expect::sum,
     .nccl_kernel = true,
     .mpi_name = "",
     .nccl_tuner_id = 1,
     .nccl_tuner_name = "reduce",
     .ompi_coll_id = -1,
     .ompi_algorithms = {},
     .mpich_cvar = "",
     .mpich_function = "",
     .mpich_size_key = ""},
    {.op = CollectiveOp::alltoall,
     .name = "alltoall",
     .busbw = BusbwRule::all_ranks,
     .split = true,
     .send = Share::whole,
     .recv = Share::whole,
     .root_only_receives = false,
     .expect = Expect::transposed,
     .nccl_kernel = true,
     .mpi_name = "alltoall",
     .nccl_tuner_id = -1,
     .nccl_tuner_name = "",
     .ompi_coll_id = 3,
     .ompi_algorithms = kOmpiAlltoall,
     .mpich_cvar = "ALLTOALL",
     .mpich_function = "Alltoall",
     .mpich_size_key = "total_msg_size"},
    {.op = CollectiveOp::sendrecv,
     .name = "sendrecv",
     .busbw = BusbwRule::one_to_one,
     .split = false,
     .send = Share::whole,
     .recv = Share::whole,
     .root_only_receives = false,
     .expect = Expect::previous,
     .nccl_kernel = true,
     .mpi_name = "",
     .nccl_tuner_id = -1,
     .nccl_tuner_name = "",
     .ompi_coll_id = -1,
     .ompi_algorithms = {},
     .mpich_cvar = "",
     .mpich_function = "",
     .mpich_size_key = ""},
};

}  // namespace

std::span<const CollectiveRow> collective_rows() { return kRows; }

const CollectiveRow& collective_row(CollectiveOp op) { return kRows[static_cast<size_t>(op)]; }

std::string_view to_string(CollectiveOp op) { return collective_row(op).name; }

const CollectiveRow* find_collective(std::string_view name) {
  for (const auto& r : kRows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const CollectiveRow* find_mpi_collective(std::string_view mpi_name) {
  if (mpi_name.empty()) return nullptr;
  for (const auto& r : kRows) {
    if (r.mpi_name == mpi_name) return &r;
  }
  return nullptr;
}

double busbw_factor(const CollectiveRow& row, int ranks) {
  if (ranks < 1) return 1.0;
  const double n = ranks;
  switch (row.busbw) {
    case BusbwRule::all_ranks_twice: return 2.0 * (n - 1) / n;
    case BusbwRule::all_ranks: return (n - 1) / n;
    case BusbwRule::one_to_one: return 1.0;
  }
  return 1.0;
}

Shares collective_shares(const CollectiveRow& row, uint64_t total, int ranks) {
  Shares s;
  s.block = row.split && ranks > 0 ? total / static_cast<uint64_t>(ranks) : total;
  s.send = row.send == Share::block ? s.block : total;
  s.recv = row.recv == Share::block ? s.block : total;
  return s;
}

}  // namespace acceltune
