// The nccl-tuner table: what its rows mean and which rows are safe to hand NCCL. One reader and
// validator for every party: the tuner plugin (libnccl-tuner-acceltune.so) reads a table with it
// at communicator init, the nccl-tuner export checks its own output with it, and a linter can
// point it at any file. It uses nothing but the C++ library and the collectives' table
// (tuner/collectives.cpp, which uses nothing else either), so the plugin, which links nothing of
// acceltune, compiles both in.
//
//   collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff[,chunkSize]]]
//
// The first ten columns are those of NCCL's example tuner; the eleventh (chunkSize) is
// acceltune's. -1 is the wildcard in every column but the first three.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace acceltune::nccl_table {

inline constexpr int kAny = -1;  // the table's wildcard

// NCCL's numbering (ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_*), which the tuner interface uses.
inline constexpr int kCollectives = 5;  // the rows of tuner/collectives.hpp with an NCCL tuner id
inline constexpr int kAlgorithms = 7;   // tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat
inline constexpr int kProtocols = 3;    // ll, ll128, simple
inline constexpr int kProtocolLL = 0, kProtocolLL128 = 1, kProtocolSimple = 2;

// NCCL keeps per-channel state in arrays of this many entries (MAXCHANNELS).
inline constexpr int kMaxChannels = 64;

// The unit NCCL cuts a chunk into for each protocol (ncclProtoGrainSize): it rounds a chunk down
// to a multiple of it, so a chunk below it becomes 0 and NCCL divides by it.
inline constexpr int64_t grain_bytes(int protocol) {
  return protocol == kProtocolLL ? 16 : protocol == kProtocolLL128 ? 1920 : protocol == kProtocolSimple ? 512 : 16;
}
inline constexpr int64_t kMinGrain = 16;
// NCCL keeps a chunk in an int; anything this large is clamped to its buffer anyway.
inline constexpr int64_t kMaxChunk = INT32_MAX;

// The chunk NCCL can use for `protocol`: `chunk` rounded down to a multiple of the grain, or 0
// when that leaves nothing (then NCCL's own value must stand).
inline constexpr int64_t usable_chunk(int64_t chunk, int protocol) {
  const int64_t g = grain_bytes(protocol);
  return chunk >= g ? chunk / g * g : 0;
}

struct Row {
  int collective = 0;
  uint64_t min_bytes = 0, max_bytes = 0;
  int algorithm = kAny, protocol = kAny, channels = kAny, nodes = kAny, ranks = kAny;
  int pipe_ops = kAny, reg_buff = kAny;
  int64_t chunk_bytes = kAny;
  int columns = 0;  // as written: 8 to 11
  int line = 0;     // in the file, for messages
};

// The whole text, every line checked. The first bad line makes the table unusable (an error
// naming the line and what to write instead), since half a table would silently tune some sizes
// and not others. Reading stops at the first row past `max_rows` with an error saying so.
struct ParseResult {
  std::vector<Row> rows;
  std::string error;  // empty when every line parsed
};
ParseResult parse_table(const std::string& text, size_t max_rows = SIZE_MAX);

// Lower case without '_', '-' and ' ', so NCCL's environment spellings (NVLSTree, CollnetDirect)
// and the table's (nvls_tree, collnet_direct) meet.
std::string folded(const std::string& name);

// NCCL's numbering of a name from the table or from NCCL_ALGO / NCCL_PROTO ("ring", "Ring",
// "nvls_tree", "NVLSTree", "ll128", "Simple"); kAny for "-1", kUnknown when NCCL names no such thing.
inline constexpr int kUnknown = -2;
int algorithm_of(const std::string& name);
int protocol_of(const std::string& name);
int collective_of(const std::string& name);  // the collective's row's NCCL tuner id
const char* algorithm_name(int algorithm);  // the table's spelling: "ring", "nvls_tree"; "-1" for kAny
const char* protocol_name(int protocol);
const char* collective_name(int collective);

}  // namespace acceltune::nccl_table
