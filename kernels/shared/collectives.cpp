// The collectives' busbw rules (nccl-tests' definitions), one row per collective.
#include "kernels/shared/collectives.hpp"

namespace acceltune {
namespace {

constexpr CollectiveRow kRows[] = {
    {"allreduce", BusbwRule::all_ranks_twice}, {"allgather", BusbwRule::all_ranks},
    {"reduce_scatter", BusbwRule::all_ranks},  {"alltoall", BusbwRule::all_ranks},
    {"broadcast", BusbwRule::one_to_one},      {"bcast", BusbwRule::one_to_one},
    {"reduce", BusbwRule::one_to_one},         {"sendrecv", BusbwRule::one_to_one},
};

}  // namespace

std::optional<CollectiveRow> find_collective_row(std::string_view name) {
  for (const auto& r : kRows) {
    if (r.name == name) return r;
  }
  return std::nullopt;
}

double busbw_factor(std::string_view collective, int ranks) {
  const auto row = find_collective_row(collective);
  if (!row || ranks < 1) return 1.0;
  const double n = ranks;
  switch (row->busbw) {
    case BusbwRule::all_ranks_twice: return 2.0 * (n - 1) / n;
    case BusbwRule::all_ranks: return (n - 1) / n;
    case BusbwRule::one_to_one: return 1.0;
  }
  return 1.0;
}

}  // namespace acceltune
