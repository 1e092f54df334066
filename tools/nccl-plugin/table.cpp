#include "tools/nccl-plugin/table.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace acceltune::nccl_plugin {
namespace {

// Lower case without '_' and '-', so NCCL's environment spellings (NVLSTree, CollnetDirect) and
// the table's (nvls_tree, collnet_direct) meet.
std::string folded(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || errno != 0 || end == s.c_str() || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

int algorithm_of(const std::string& name) {
  if (name == "-1") return kAny;
  const std::string f = folded(name);
  if (f == "tree") return ACC_NCCL_ALGO_TREE;
  if (f == "ring") return ACC_NCCL_ALGO_RING;
  if (f == "collnetdirect") return ACC_NCCL_ALGO_COLLNET_DIRECT;
  if (f == "collnetchain") return ACC_NCCL_ALGO_COLLNET_CHAIN;
  if (f == "nvls") return ACC_NCCL_ALGO_NVLS;
  if (f == "nvlstree") return ACC_NCCL_ALGO_NVLS_TREE;
  if (f == "pat") return ACC_NCCL_ALGO_PAT;
  return -2;
}

int protocol_of(const std::string& name) {
  if (name == "-1") return kAny;
  const std::string f = folded(name);
  if (f == "ll") return ACC_NCCL_PROTO_LL;
  if (f == "ll128") return ACC_NCCL_PROTO_LL128;
  if (f == "simple") return ACC_NCCL_PROTO_SIMPLE;
  return -2;
}

int collective_of(const std::string& name) {
  const std::string f = folded(name);
  if (f == "broadcast") return acc_ncclFuncBroadcast;
  if (f == "reduce") return acc_ncclFuncReduce;
  if (f == "allgather") return acc_ncclFuncAllGather;
  if (f == "reducescatter") return acc_ncclFuncReduceScatter;
  if (f == "allreduce") return acc_ncclFuncAllReduce;
  return -2;
}

const char* algorithm_name(int a) {
  static const char* const names[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  return a >= 0 && a < ACC_NCCL_NUM_ALGORITHMS ? names[a] : "-1";
}

const char* protocol_name(int p) {
  static const char* const names[] = {"ll", "ll128", "simple"};
  return p >= 0 && p < ACC_NCCL_NUM_PROTOCOLS ? names[p] : "-1";
}

const char* collective_name(int c) {
  static const char* const names[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  return c >= 0 && c < 5 ? names[c] : "unknown";
}

ParseResult parse_table(const std::string& text) {
  ParseResult r;
  size_t pos = 0;
  int line_no = 0;
  auto fail = [&](const std::string& why) {
    r.rows.clear();
    r.error = "line " + std::to_string(line_no) + ": " + why;
    return r;
  };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = trimmed(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    size_t b = 0;
    while (true) {
      const size_t c = line.find(',', b);
      f.push_back(trimmed(line.substr(b, c == std::string::npos ? std::string::npos : c - b)));
      if (c == std::string::npos) break;
      b = c + 1;
    }
    // A header row (not every writer comments it out).
    if (folded(f[0]) == "collective" || folded(f[0]) == "colltype") continue;
    if (f.size() < 8 || f.size() > 11) {
      return fail(
          "expected 8 to 11 comma-separated fields (collective,min_bytes,max_bytes,algorithm,protocol,"
          "channels,nNodes,nRanks[,numPipeOps[,regBuff[,chunkSize]]]), got " +
          std::to_string(f.size()));
    }
    Row row;
    row.line = line_no;
    row.collective = collective_of(f[0]);
    if (row.collective < 0) {
      return fail("unknown collective '" + f[0] + "' (broadcast, reduce, allgather, reducescatter, allreduce)");
    }
    if (!parse_u64(f[1], &row.min_bytes)) return fail("min_bytes '" + f[1] + "' is not a byte count");
    if (!parse_u64(f[2], &row.max_bytes)) return fail("max_bytes '" + f[2] + "' is not a byte count");
    if (row.min_bytes > row.max_bytes) return fail("min_bytes is larger than max_bytes");
    row.algorithm = algorithm_of(f[3]);
    if (row.algorithm == -2) {
      return fail("unknown algorithm '" + f[3] +
                  "' (tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, -1)");
    }
    row.protocol = protocol_of(f[4]);
    if (row.protocol == -2) return fail("unknown protocol '" + f[4] + "' (ll, ll128, simple, -1)");
    int64_t v = 0;
    const char* names[] = {"channels", "nNodes", "nRanks", "numPipeOps", "regBuff"};
    int* fields[] = {&row.channels, &row.nodes, &row.ranks, &row.pipe_ops, &row.reg_buff};
    for (size_t k = 0; k < 5; ++k) {
      if (5 + k >= f.size()) break;
      if (!parse_int(f[5 + k], -1, k == 4 ? 1 : 1 << 24, &v)) {
        return fail(std::string(names[k]) + " '" + f[5 + k] + "' is not -1 or a count");
      }
      *fields[k] = static_cast<int>(v);
    }
    if (f.size() > 10) {
      if (!parse_int(f[10], -1, int64_t{1} << 40, &v) || v == 0) {
        return fail("chunkSize '" + f[10] + "' is not -1 or a positive byte count");
      }
      row.chunk_bytes = v;
    }
    r.rows.push_back(row);
  }
  return r;
}

void Table::build(const std::vector<Row>& rows, size_t nodes, size_t ranks) {
  rows_.clear();
  for (auto& b : buckets_) b = Bucket{};
  for (const Row& r : rows) {
    if (r.nodes != kAny && static_cast<size_t>(r.nodes) != nodes) continue;
    if (r.ranks != kAny && static_cast<size_t>(r.ranks) != ranks) continue;
    rows_.push_back(r);
  }
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
    // Every segment lies wholly inside or outside each row, so its start decides coverage.
    b.offsets.push_back(0);
    for (uint64_t s : b.starts) {
      for (uint32_t i : mine) {
        if (rows_[i].min_bytes <= s && s <= rows_[i].max_bytes) b.members.push_back(i);
      }
      b.offsets.push_back(static_cast<uint32_t>(b.members.size()));
    }
  }
}

}  // namespace acceltune::nccl_plugin
