// The tuning table of the NCCL tuner plugin: the CSV that `acceltune export --format nccl-tuner`
// writes (the same columns NCCL's example tuner reads), parsed once at init into a form that a
// per-call lookup can search without allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "results/nccl_tuner_table.hpp"

namespace acceltune::nccl_plugin {

using nccl_table::kAny;
using nccl_table::Row;

// The rows that apply to one communicator (its node and rank counts), grouped per collective
// and cut into byte segments that every row either covers whole or not at all. A lookup is a
// binary search for the segment and a walk over its rows in file order, so the first matching
// row of the file wins, as in NCCL's example tuner.
class Table {
 public:
  // False (and an empty table) when the rows overlap so much that the per-segment lists would
  // pass `max_entries`: a table of nested ranges grows as rows squared.
  bool build(const std::vector<Row>& rows, size_t nodes, size_t ranks, size_t max_entries);
  size_t size() const { return rows_.size(); }

  // The candidate rows for this size, in file order: [*begin, *end) indexes rows().
  struct Span {
    const uint32_t* begin;
    const uint32_t* end;
  };
  Span candidates(int collective, uint64_t bytes) const noexcept {
    if (collective < 0 || collective >= kCollectives) return {nullptr, nullptr};
    const Bucket& b = buckets_[collective];
    if (b.starts.empty()) return {nullptr, nullptr};
    // The last segment whose start is <= bytes; starts[0] is always 0.
    const uint64_t* s = b.starts.data();
    size_t n = b.starts.size();
    while (n > 1) {
      const size_t half = n / 2;
      s = (s[half] <= bytes) ? s + half : s;
      n -= half;
    }
    const size_t k = static_cast<size_t>(s - b.starts.data());
    return {b.members.data() + b.offsets[k], b.members.data() + b.offsets[k + 1]};
  }
  const Row& row(uint32_t i) const noexcept { return rows_[i]; }

 private:
  static constexpr int kCollectives = nccl_table::kCollectives;  // the collectives NCCL asks a tuner about
  struct Bucket {
    std::vector<uint64_t> starts;   // segment starts, ascending, starts[0] == 0
    std::vector<uint32_t> offsets;  // segment k's rows are members[offsets[k] .. offsets[k+1])
    std::vector<uint32_t> members;
  };
  std::vector<Row> rows_;
  Bucket buckets_[kCollectives];
};

}  // namespace acceltune::nccl_plugin
