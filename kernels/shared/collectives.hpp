// The collectives' table the MPI and NCCL kernels both read: for each collective, how bus
// bandwidth follows from algorithm bandwidth (nccl-tests' definitions), so figures from the two
// families compare with each other and with nccl-tests. Adding a collective is adding a row.
#pragma once

#include <optional>
#include <string_view>

namespace acceltune {

enum class BusbwRule {
  all_ranks_twice,  // 2(n-1)/n: allreduce
  all_ranks,        // (n-1)/n: allgather, reduce_scatter, alltoall
  one_to_one,       // 1: broadcast, reduce, sendrecv
};

struct CollectiveRow {
  std::string_view name;   // as the kernels name it; "bcast" is MPI's name of broadcast
  BusbwRule busbw;
};

// The row of a collective by name, or none.
std::optional<CollectiveRow> find_collective_row(std::string_view name);
// busbw = algbw x this factor for `ranks` ranks; 1 for a name the table lacks.
double busbw_factor(std::string_view collective, int ranks);

}  // namespace acceltune
