// lint's NCCL tuner table checks. Every row goes through the very reader and validator the tuner
// plugin uses at communicator init (results/nccl_tuner_table.hpp's parse_table), so lint and the
// plugin never disagree on a row; lint reports every bad line where the plugin stops at the first.
// On top: pairs NCCL never runs and ranges of one collective that overlap or leave a gap.
#include <algorithm>
#include <map>
#include <regex>
#include <tuple>

#include "results/lint.hpp"
#include "results/nccl_tuner_table.hpp"

namespace acceltune {
namespace {

namespace nt = nccl_table;
constexpr int kTree = 0, kRing = 1, kCollnetDirect = 2, kCollnetChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;

// Why NCCL never runs this algorithm with this protocol or for this collective; "" when it may.
// NCCL's rule, src/graph/tuning.cc (ncclTopoTuneModel, 2.23 to 2.28): broadcast and reduce run
// Ring only; allgather and reducescatter Ring, PAT, NVLS or CollNetDirect; allreduce anything but
// PAT; NVLS and NVLSTree ("p != NCCL_PROTO_SIMPLE) continue"), PAT and both CollNets ("busBw = 0;
// // Not used") only with Simple. NCCL gives such a pair no bandwidth, so a row naming it is
// refused or ignored and the size falls to another choice.
std::string refused(int collective, int algorithm, int protocol) {
  if (algorithm == nt::kAny) return "";
  if ((collective == kBroadcast || collective == kReduce) && algorithm != kRing) {
    return fmt::format("NCCL runs {} with ring only", nt::collective_name(collective));
  }
  if ((collective == kAllGather || collective == kReduceScatter) && algorithm != kRing && algorithm != kPat &&
      algorithm != kNvls && algorithm != kCollnetDirect) {
    return fmt::format("NCCL runs {} with ring, pat, nvls or collnet_direct only", nt::collective_name(collective));
  }
  if (collective == kAllReduce && algorithm == kPat) return "NCCL does not run allreduce with pat";
  const bool simple_only = algorithm == kNvls || algorithm == kNvlsTree || algorithm == kPat ||
                           algorithm == kCollnetDirect || algorithm == kCollnetChain;
  if (simple_only && protocol != nt::kAny && protocol != nt::kProtocolSimple) {
    return fmt::format("NCCL runs {} with the simple protocol only, never {}", nt::algorithm_name(algorithm),
                       nt::protocol_name(protocol));
  }
  (void)kTree;
  return "";
}

// Every row the plugin's reader takes; each line it refuses is a finding and is left out.
std::vector<nt::Row> rows_of(const std::string& path, std::string text, LintReport& r) {
  static const std::regex line_no(R"(^line (\d+): )");
  for (int tries = 0; tries < 10000; ++tries) {
    nt::ParseResult p = nt::parse_table(text);
    if (p.error.empty()) return p.rows;
    std::smatch m;
    if (!std::regex_search(p.error, m, line_no)) {
      r.findings.push_back({path, 0, p.error, "a table the NCCL plugin reads"});
      return {};
    }
    const int line = std::stoi(m[1].str());
    r.findings.push_back({path, line, "the NCCL plugin refuses the whole table for this row: " + p.error.substr(m[0].length()),
                          "collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff[,"
                          "chunkSize]]] with values NCCL names (-1: NCCL's choice)"});
    // Blank that line and read the rest again.
    size_t pos = 0;
    for (int n = 1; n < line; ++n) {
      pos = text.find('\n', pos);
      if (pos == std::string::npos) return {};
      ++pos;
    }
    const size_t end = text.find('\n', pos);
    text.erase(pos, (end == std::string::npos ? text.size() : end) - pos);
  }
  return {};
}

// "# bytes A..B: the library default" comments: ranges an export leaves to NCCL on purpose.
std::vector<std::pair<uint64_t, uint64_t>> default_ranges(const std::string& text) {
  static const std::regex re(R"(# bytes (\d+)\.\.(\d+))");
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    out.emplace_back(std::stoull((*it)[1].str()), std::stoull((*it)[2].str()));
  }
  return out;
}

bool covered(uint64_t from, uint64_t to, const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  uint64_t at = from;
  bool moved = true;
  while (moved && at <= to) {
    moved = false;
    for (const auto& [a, b] : ranges) {
      if (a <= at && b >= at) {
        if (b >= to) return true;
        at = b + 1;
        moved = true;
      }
    }
  }
  return false;
}

void lint_ranges(const std::string& path, const std::string& text, const std::vector<nt::Row>& rows, LintReport& r) {
  using Key = std::tuple<int, int, int, int, int>;
  std::map<Key, std::vector<const nt::Row*>> groups;
  for (const auto& row : rows) groups[{row.collective, row.nodes, row.ranks, row.pipe_ops, row.reg_buff}].push_back(&row);
  const auto left_to_nccl = default_ranges(text);
  for (auto& [key, g] : groups) {
    std::stable_sort(g.begin(), g.end(), [](const nt::Row* a, const nt::Row* b) { return a->min_bytes < b->min_bytes; });
    for (size_t i = 1; i < g.size(); ++i) {
      const nt::Row& prev = *g[i - 1];
      const nt::Row& cur = *g[i];
      if (cur.min_bytes <= prev.max_bytes) {
        r.findings.push_back({path, cur.line,
                              fmt::format("bytes {}..{} overlap line {}'s range {}..{} of {}: the first row in the "
                                          "file wins, so one of them never applies",
                                          cur.min_bytes, cur.max_bytes, prev.line, prev.min_bytes, prev.max_bytes,
                                          nt::collective_name(cur.collective)),
                              fmt::format("min_bytes {} (one past line {}'s max_bytes)", prev.max_bytes + 1, prev.line)});
      } else if (cur.min_bytes > prev.max_bytes + 1 && !covered(prev.max_bytes + 1, cur.min_bytes - 1, left_to_nccl)) {
        r.findings.push_back({path, cur.line,
                              fmt::format("bytes {}..{} of {} fall between line {} and this row: no row covers them",
                                          prev.max_bytes + 1, cur.min_bytes - 1, nt::collective_name(cur.collective),
                                          prev.line),
                              fmt::format("min_bytes {}, or a row for them, or the comment '# bytes {}..{}: the "
                                          "library default, NCCL chooses' if NCCL's own choice is meant",
                                          prev.max_bytes + 1, prev.max_bytes + 1, cur.min_bytes - 1)});
      }
    }
  }
}

}  // namespace

void lint_nccl_tuner_text(const std::string& path, const std::string& text, LintReport& r) {
  const std::vector<nt::Row> rows = rows_of(path, text, r);
  for (const auto& row : rows) {
    const std::string why = refused(row.collective, row.algorithm, row.protocol);
    if (why.empty()) continue;
    r.findings.push_back({path, row.line, fmt::format("{},{} for {}: {}", nt::algorithm_name(row.algorithm),
                                                      nt::protocol_name(row.protocol), nt::collective_name(row.collective), why),
                          "a pair NCCL runs (simple with nvls, nvls_tree, pat and the collnets; ring for broadcast and "
                          "reduce), or -1 to leave the choice to NCCL"});
  }
  lint_ranges(path, text, rows, r);
}

}  // namespace acceltune
