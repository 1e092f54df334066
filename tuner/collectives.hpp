// The collectives, one row each: every fact that a kernel timing one or a writer exporting its
// choices needs (names, nccl-tests' busbw rule, how the message is shared between the ranks,
// what each rank must receive, NCCL's tuner id, Open MPI's coll/tuned id and algorithms, MPICH's
// selection names). The MPI and NCCL kernels, the Open MPI, MPICH and nccl-tuner writers and the
// NCCL tuner plugin all read it, so adding a collective is adding a row (and, in each kernel that
// runs it, the library call). It uses nothing but the C++ library: the plugin compiles it in.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace acceltune {

enum class CollectiveOp { allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall, sendrecv };

// busbw = algbw x factor, as nccl-tests defines it.
enum class BusbwRule {
  all_ranks_twice,  // 2(n-1)/n: allreduce
  all_ranks,        // (n-1)/n: allgather, reduce_scatter, alltoall
  one_to_one,       // 1: broadcast, reduce, sendrecv
};

// What one rank's send or receive buffer holds: the whole message, or one rank's block of it.
enum class Share { whole, block };

// What element i of rank `me`'s receive buffer holds when rank q's input holds element(q, j).
enum class Expect {
  sum,              // allreduce, reduce: the sum over q of element(q, i)
  gathered,         // allgather: element(i / block, i % block)
  scattered_sum,    // reduce_scatter: the sum over q of element(q, me * block + i)
  root,             // broadcast: element(0, i)
  transposed,       // alltoall: element(i / block, me * block + i % block)
  previous,         // sendrecv: element(me - 1 mod n, i)
};

struct CollectiveRow {
  CollectiveOp op;
  std::string_view name;  // the operation as spaces and the nccl kernel name it
  BusbwRule busbw;
  // Cut into one block per rank: a message is measured at a whole number of blocks, and the
  // MPI and NCCL calls count elements per block.
  bool split;
  Share send, recv;
  bool root_only_receives;  // only rank 0's receive buffer is defined (reduce)
  Expect expect;
  bool nccl_kernel;  // the nccl kernel runs it
  // The MPI standard's name, as the mpi-coll kernel, its plain client, Open MPI's coll/tuned and
  // MPICH's selection file spell it; empty: no MPI part of acceltune runs or tunes it.
  std::string_view mpi_name;
  int nccl_tuner_id;                  // ncclFunc_t where NCCL asks a tuner about it, else -1
  std::string_view nccl_tuner_name;   // the nccl-tuner table's spelling
  int ompi_coll_id;                   // COLLTYPE of Open MPI's coll/base (coll_base_functions.h), else -1
  std::span<const std::string_view> ompi_algorithms;  // coll_tuned_<mpi_name>_algorithm's names, by number
  std::string_view mpich_cvar;        // MPIR_CVAR_<this>_INTRA_ALGORITHM; empty: none
  std::string_view mpich_function;    // MPIR_<this>_intra_<algorithm>
  std::string_view mpich_size_key;    // avg_msg_size (per-rank buffer) or total_msg_size
};

// Every row, in CollectiveOp's order.
std::span<const CollectiveRow> collective_rows();
const CollectiveRow& collective_row(CollectiveOp op);
std::string_view to_string(CollectiveOp op);
// By `name`, and by `mpi_name`; null for a name no row has.
const CollectiveRow* find_collective(std::string_view name);
const CollectiveRow* find_mpi_collective(std::string_view mpi_name);

// busbw = algbw x this factor for `ranks` ranks (0 for allreduce on one rank).
double busbw_factor(const CollectiveRow& row, int ranks);

// The element counts of one call over `total` elements (a whole number of blocks where the row
// splits): the block each rank owns, and what each rank sends and receives.
struct Shares {
  uint64_t block = 0, send = 0, recv = 0;
};
Shares collective_shares(const CollectiveRow& row, uint64_t total, int ranks);

// The value element i of rank `me`'s receive buffer must hold after the collective, when rank q's
// input holds element(q, j); `block` is collective_shares' block.
template <typename Element>
float expected_element(const CollectiveRow& row, Element element, int me, int ranks, uint64_t i, uint64_t block) {
  const auto mine = static_cast<uint64_t>(me);
  float want = 0;
  switch (row.expect) {
    case Expect::sum:
      for (int q = 0; q < ranks; ++q) want += element(q, i);
      return want;
    case Expect::gathered: return element(static_cast<int>(i / block), i % block);
    case Expect::scattered_sum:
      for (int q = 0; q < ranks; ++q) want += element(q, mine * block + i);
      return want;
    case Expect::root: return element(0, i);
    case Expect::transposed: return element(static_cast<int>(i / block), mine * block + i % block);
    case Expect::previous: return element((me + ranks - 1) % ranks, i);
  }
  return want;
}

}  // namespace acceltune
