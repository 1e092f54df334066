// The definitions behind results/nccl_tuner_table.hpp: the nccl-tuner table.
#include "results/nccl_tuner_table.hpp"

#include "tuner/collectives.hpp"

#include <cerrno>
#include <cstdlib>

namespace acceltune::nccl_table {
namespace {

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

// -1, or an integer in [lo, hi].
bool parse_any_or(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || errno != 0 || end == s.c_str() || *end != '\0') return false;
  if (v != kAny && (v < lo || v > hi)) return false;
  *out = v;
  return true;
}

// At most 12 fields: one more than a row may have is enough to refuse it.
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> f;
  size_t b = 0;
  while (f.size() < 11) {
    const size_t c = line.find(',', b);
    f.push_back(trimmed(line.substr(b, c == std::string::npos ? std::string::npos : c - b)));
    if (c == std::string::npos) return f;
    b = c + 1;
  }
  f.push_back(line.substr(b));
  return f;
}

// The checks of one row; "" when it is fit to hand NCCL.
std::string check_row(const std::vector<std::string>& f, Row& row) {
  if (f.size() < 8 || f.size() > 11) {
    return "expected 8 to 11 comma-separated fields (collective,min_bytes,max_bytes,algorithm,protocol,"
           "channels,nNodes,nRanks[,numPipeOps[,regBuff[,chunkSize]]]), got " +
           (f.size() > 11 ? std::string("more") : std::to_string(f.size()));
  }
  row.columns = static_cast<int>(f.size());
  row.collective = collective_of(f[0]);
  if (row.collective < 0) {
    std::string names;
    for (int c = 0; c < kCollectives; ++c) names += (c ? ", " : "") + std::string(collective_name(c));
    return "unknown collective '" + f[0] + "' (" + names + ")";
  }
  if (!parse_u64(f[1], &row.min_bytes)) return "min_bytes '" + f[1] + "' is not a byte count";
  if (!parse_u64(f[2], &row.max_bytes)) return "max_bytes '" + f[2] + "' is not a byte count";
  if (row.min_bytes > row.max_bytes) return "min_bytes is larger than max_bytes";
  row.algorithm = algorithm_of(f[3]);
  if (row.algorithm == kUnknown) {
    return "unknown algorithm '" + f[3] + "' (tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, -1)";
  }
  row.protocol = protocol_of(f[4]);
  if (row.protocol == kUnknown) return "unknown protocol '" + f[4] + "' (ll, ll128, simple, -1)";

  struct Count {
    const char* name;
    int64_t lo, hi;
    const char* expect;
    int* field;
  };
  const Count counts[] = {
      {"channels", 1, kMaxChannels, "-1 or 1 to 64 (NCCL has at most 64 channels)", &row.channels},
      {"nNodes", 1, 1 << 24, "-1 or a node count", &row.nodes},
      {"nRanks", 1, 1 << 24, "-1 or a rank count", &row.ranks},
      {"numPipeOps", 1, 1 << 24, "-1 or a count of operations", &row.pipe_ops},
      {"regBuff", 0, 1, "-1, 0 or 1", &row.reg_buff},
  };
  for (size_t k = 0; k < 5 && 5 + k < f.size(); ++k) {
    int64_t v = 0;
    if (!parse_any_or(f[5 + k], counts[k].lo, counts[k].hi, &v)) {
      return std::string(counts[k].name) + " '" + f[5 + k] + "' is not " + counts[k].expect;
    }
    *counts[k].field = static_cast<int>(v);
  }
  if (f.size() > 10) {
    int64_t v = 0;
    // The protocol's grain is the least NCCL can use; with any protocol, the smallest grain.
    const int64_t grain = grain_bytes(row.protocol);
    if (!parse_any_or(f[10], grain, kMaxChunk, &v)) {
      return "chunkSize '" + f[10] + "' is not -1 or a byte count from " + std::to_string(grain) +
             (row.protocol == kAny ? " (the smallest protocol grain)"
                                   : std::string(" (the ") + protocol_name(row.protocol) + " grain)") +
             " to " + std::to_string(kMaxChunk);
    }
    row.chunk_bytes = v;
  }
  return "";
}

}  // namespace

std::string folded(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

int algorithm_of(const std::string& name) {
  if (name == "-1") return kAny;
  const std::string f = folded(name);
  for (int a = 0; a < kAlgorithms; ++a) {
    if (f == folded(algorithm_name(a))) return a;
  }
  return kUnknown;
}

int protocol_of(const std::string& name) {
  if (name == "-1") return kAny;
  const std::string f = folded(name);
  for (int p = 0; p < kProtocols; ++p) {
    if (f == protocol_name(p)) return p;
  }
  return kUnknown;
}

int collective_of(const std::string& name) {
  const std::string f = folded(name);
  for (const auto& row : collective_rows()) {
    if (row.nccl_tuner_id >= 0 && f == row.nccl_tuner_name) return row.nccl_tuner_id;
  }
  return kUnknown;
}

const char* algorithm_name(int a) {
  static const char* const names[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  return a >= 0 && a < kAlgorithms ? names[a] : "-1";
}

const char* protocol_name(int p) {
  static const char* const names[] = {"ll", "ll128", "simple"};
  return p >= 0 && p < kProtocols ? names[p] : "-1";
}

const char* collective_name(int c) {
  for (const auto& row : collective_rows()) {
    // The rows' names are string literals, so their data ends in a NUL.
    if (row.nccl_tuner_id >= 0 && row.nccl_tuner_id == c) return row.nccl_tuner_name.data();
  }
  return "unknown";
}

ParseResult parse_table(const std::string& text, size_t max_rows) {
  ParseResult r;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = trimmed(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = fields_of(line);
    // A header row (not every writer comments it out).
    if (folded(f[0]) == "collective" || folded(f[0]) == "colltype") continue;
    Row row;
    row.line = line_no;
    std::string why = r.rows.size() >= max_rows
                          ? "more than " + std::to_string(max_rows) + " rows; a table this long is not a tuning table"
                          : check_row(f, row);
    if (!why.empty()) {
      r.rows.clear();
      r.error = "line " + std::to_string(line_no) + ": " + why;
      return r;
    }
    r.rows.push_back(row);
  }
  return r;
}

}  // namespace acceltune::nccl_table
