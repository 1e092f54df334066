// The definitions behind tools/nccl-plugin/table.hpp: the tuning table of the NCCL tuner plugin.
#include "tools/nccl-plugin/table.hpp"

#include <algorithm>

namespace acceltune::nccl_plugin {

bool Table::build(const std::vector<Row>& rows, size_t nodes, size_t ranks, size_t max_entries) {
  rows_.clear();
  for (auto& b : buckets_) b = Bucket{};
  for (const Row& r : rows) {
    if (r.nodes != kAny && static_cast<size_t>(r.nodes) != nodes) continue;
    if (r.ranks != kAny && static_cast<size_t>(r.ranks) != ranks) continue;
    rows_.push_back(r);
  }
  size_t entries = 0;
  for (int c = 0; c < kCollectives; ++c) {
    std::vector<uint32_t> mine;
    for (uint32_t i = 0; i < rows_.size(); ++i) {
      if (rows_[i].collective == c) mine.push_back(i);
    }
    if (mine.empty()) continue;
    Bucket& b = buckets_[c];
    b.starts.push_back(0);
    for (uint32_t i : mine) {
      b.starts.push_back(rows_[i].min_bytes);
      if (rows_[i].max_bytes != UINT64_MAX) b.starts.push_back(rows_[i].max_bytes + 1);
    }
    std::sort(b.starts.begin(), b.starts.end());
    b.starts.erase(std::unique(b.starts.begin(), b.starts.end()), b.starts.end());
    // Every segment lies wholly inside or outside each row: a row covers the segments from the
    // one starting at its min_bytes up to the one before max_bytes + 1. Counted first, so a
    // table of nested ranges is refused before anything large is allocated.
    auto first_segment = [&](uint64_t bytes) {
      return static_cast<size_t>(std::lower_bound(b.starts.begin(), b.starts.end(), bytes) - b.starts.begin());
    };
    auto end_segment = [&](const Row& r) {
      return r.max_bytes == UINT64_MAX ? b.starts.size() : first_segment(r.max_bytes + 1);
    };
    for (uint32_t i : mine) {
      entries += end_segment(rows_[i]) - first_segment(rows_[i].min_bytes);
      if (entries > max_entries) {
        *this = Table{};
        return false;
      }
    }
    // Rows in file order within each segment.
    std::vector<std::vector<uint32_t>> per_segment(b.starts.size());
    for (uint32_t i : mine) {
      for (size_t k = first_segment(rows_[i].min_bytes), e = end_segment(rows_[i]); k < e; ++k) {
        per_segment[k].push_back(i);
      }
    }
    b.offsets.push_back(0);
    for (const auto& seg : per_segment) {
      b.members.insert(b.members.end(), seg.begin(), seg.end());
      b.offsets.push_back(static_cast<uint32_t>(b.members.size()));
    }
  }
  return true;
}

}  // namespace acceltune::nccl_plugin
