// libnccl-tuner-acceltune.so: an NCCL tuner plugin that applies the table `acceltune export
// --format nccl-tuner` writes. NCCL_TUNER_PLUGIN=acceltune loads it; the table's path comes from
// ACCELTUNE_NCCL_TUNER_TABLE, else NCCL_TUNER_CONFIG_FILE (the variable NCCL's example tuner
// reads, so its files keep working). Every interface version from v2 to v7 is exported.
//
// Whatever goes wrong, NCCL's own choice stands: init always succeeds (a context with an empty
// table when the file is missing, not a regular file, too large or has a bad row, reported once
// through NCCL's logger), and the per-call functions never allocate, never log and always return
// success. The table is read once per communicator, at init: a file replaced while the job runs
// changes only the communicators created after.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "results/nccl_tuner_table.hpp"
#include "tools/nccl-plugin/nccl_tuner_abi.h"
#include "tools/nccl-plugin/table.hpp"
#include "tuner/regular_file.hpp"

namespace acceltune::nccl_plugin {
namespace {

using nccl_table::usable_chunk;

// Beyond this a table is surely not ours, and the per-segment row lists would grow large.
constexpr size_t kMaxRows = 10000;
constexpr size_t kMaxTableBytes = 16u << 20;
// Row references over all byte segments (4 bytes each): nested ranges grow as rows squared.
constexpr size_t kMaxIndexEntries = 1u << 20;

// What getCollInfo decided, remembered for getChunkSize. NCCL asks getCollInfo once per
// collective (or per group of similar ones) with the collective's size, then asks getChunkSize
// once per channel slice with the slice's size and the algorithm and protocol it settled on; so a
// chunk row is found again by collective, algorithm and protocol, not by size. The decisions of
// one round (the getCollInfo calls up to the next getChunkSize) are kept; a round that decided
// two different chunks for the same pair, or left a pair to NCCL that another call tuned, gets
// NCCL's own chunk for it. NCCL calls one communicator's tuner from one thread at a time.
struct Decision {
  uint32_t round = 0;  // 0: never
  int32_t chunk = 0;   // 0: none (NCCL's own), kConflict: differing chunks in one round
};
constexpr int32_t kConflict = -1;

struct Context {
  Table table;
  acc_ncclDebugLogger_t log = nullptr;
  bool any_chunk = false;  // whether any row of the table names a chunk
  uint32_t round = 1;
  bool chunk_asked = false;  // getChunkSize was called in this round
  // [collective][algorithm + 1][protocol + 1]; index 0 stands for "whichever NCCL picks".
  Decision decided[nccl_table::kCollectives][nccl_table::kAlgorithms + 1][nccl_table::kProtocols + 1];

  void note(int coll, int algorithm, int protocol, int64_t chunk) {
    if (!any_chunk) return;
    if (chunk_asked) {
      ++round;
      chunk_asked = false;
    }
    Decision& d = decided[coll][algorithm + 1][protocol + 1];
    const int32_t c = chunk > 0 ? static_cast<int32_t>(chunk) : 0;
    if (d.round != round) {
      d = Decision{round, c};
    } else if (d.chunk != c) {
      d.chunk = kConflict;
    }
  }
  // The chunk this round decided for the pair, or 0 for NCCL's own.
  int64_t chunk_for(int coll, int algorithm, int protocol) {
    if (!any_chunk) return 0;  // (the shared empty context is never written)
    chunk_asked = true;
    int64_t found = -2;  // nothing yet
    const Decision* cands[] = {&decided[coll][algorithm + 1][protocol + 1], &decided[coll][0][protocol + 1],
                               &decided[coll][algorithm + 1][0], &decided[coll][0][0]};
    for (const Decision* d : cands) {
      if (d->round != round) continue;
      if (d->chunk == kConflict) return 0;
      if (found == -2) {
        found = d->chunk;
      } else if (found != d->chunk) {
        return 0;
      }
    }
    return found > 0 ? found : 0;
  }
};

template <typename... A>
void say(acc_ncclDebugLogger_t log, acc_ncclDebugLogLevel level, const char* fmt, A... args) {
  if (log) log(level, ACC_NCCL_SUBSYS_TUNING | ACC_NCCL_SUBSYS_INIT, "acceltune_tuner", 0, fmt, args...);
}

void load(Context& ctx, size_t ranks, size_t nodes) {
  const char* var = "ACCELTUNE_NCCL_TUNER_TABLE";
  const char* path = std::getenv(var);
  if (!path || !*path) {
    var = "NCCL_TUNER_CONFIG_FILE";
    path = std::getenv(var);
  }
  if (!path || !*path) {
    say(ctx.log, ACC_NCCL_LOG_INFO,
        "acceltune tuner: neither ACCELTUNE_NCCL_TUNER_TABLE nor NCCL_TUNER_CONFIG_FILE is set; NCCL chooses");
    return;
  }
  // Never blocks: a FIFO or a directory is refused before it is opened.
  std::string text, why;
  if (!read_regular_file(path, text, why, kMaxTableBytes)) {
    say(ctx.log, ACC_NCCL_LOG_WARN, "acceltune tuner: %s=%s cannot be read (%s); NCCL chooses", var, path,
        why.c_str());
    return;
  }
  nccl_table::ParseResult parsed = nccl_table::parse_table(text, kMaxRows);
  if (!parsed.error.empty()) {
    say(ctx.log, ACC_NCCL_LOG_WARN, "acceltune tuner: %s: %s; the table is not used, NCCL chooses", path,
        parsed.error.c_str());
    return;
  }
  if (!ctx.table.build(parsed.rows, nodes, ranks, kMaxIndexEntries)) {
    say(ctx.log, ACC_NCCL_LOG_WARN,
        "acceltune tuner: %s: its %zu rows overlap too much to index (more than %zu row-segment pairs); the "
        "table is not used, NCCL chooses",
        path, parsed.rows.size(), kMaxIndexEntries);
    return;
  }
  if (ctx.table.size() == 0 && !parsed.rows.empty()) {
    say(ctx.log, ACC_NCCL_LOG_WARN,
        "acceltune tuner: %s: none of its %zu rows is for %zu nodes and %zu ranks; NCCL chooses", path,
        parsed.rows.size(), nodes, ranks);
    return;
  }
  for (size_t i = 0; i < ctx.table.size(); ++i) {
    if (ctx.table.row(static_cast<uint32_t>(i)).chunk_bytes > 0) ctx.any_chunk = true;
  }
  say(ctx.log, ACC_NCCL_LOG_INFO, "acceltune tuner: %s: %zu of %zu rows apply to %zu nodes, %zu ranks", path,
      ctx.table.size(), parsed.rows.size(), nodes, ranks);
}

// Where allocation fails NCCL still gets a valid context: this one, whose table is empty.
Context g_empty_context;

void* make_context(size_t ranks, size_t nodes, acc_ncclDebugLogger_t log) {
  Context* ctx = new (std::nothrow) Context;
  if (!ctx) {
    say(log, ACC_NCCL_LOG_WARN, "acceltune tuner: out of memory at init; NCCL chooses");
    return &g_empty_context;
  }
  ctx->log = log;
  try {
    load(*ctx, ranks, nodes);
  } catch (...) {
    ctx->table = Table{};
    say(log, ACC_NCCL_LOG_WARN, "acceltune tuner: out of memory reading the table; NCCL chooses");
  }
  return ctx;
}

acc_ncclResult_t destroy_context(void* context) {
  if (context && context != &g_empty_context) delete static_cast<Context*>(context);
  return acc_ncclSuccess;
}

bool row_applies(const Row& r, int pipe_ops, int reg_buff) {
  return (r.pipe_ops == kAny || r.pipe_ops == pipe_ops) && (r.reg_buff == kAny || r.reg_buff == reg_buff);
}

// Zeroes the cost of the row's algorithm/protocol pair when NCCL left it eligible. A wildcard on
// one side picks NCCL's cheapest eligible entry on that side. False when nothing is eligible,
// so the next matching row gets its turn. The pair chosen goes to *a and *p (kAny where NCCL
// still picks).
bool choose_in_table(const Row& r, float* costs, int num_algo, int num_proto, int* a_out, int* p_out) {
  *a_out = r.algorithm;
  *p_out = r.protocol;
  if (r.algorithm == kAny && r.protocol == kAny) return true;
  if (!costs || num_algo <= 0 || num_proto <= 0) return false;
  if (r.algorithm != kAny && r.protocol != kAny) {  // the usual row: one named pair
    if (r.algorithm >= num_algo || r.protocol >= num_proto) return false;
    float& c = costs[r.algorithm * num_proto + r.protocol];
    if (c < 0.0f) return false;
    c = 0.0f;
    return true;
  }
  int best_a = -1, best_p = -1;
  float best = 0;
  const int a0 = r.algorithm == kAny ? 0 : r.algorithm, a1 = r.algorithm == kAny ? num_algo : r.algorithm + 1;
  const int p0 = r.protocol == kAny ? 0 : r.protocol, p1 = r.protocol == kAny ? num_proto : r.protocol + 1;
  if (a1 > num_algo || p1 > num_proto) return false;
  for (int a = a0; a < a1; ++a) {
    for (int p = p0; p < p1; ++p) {
      const float c = costs[a * num_proto + p];
      // NCCL marks what it ruled out with -1.0 (NCCL_ALGO_PROTO_IGNORE); any negative is not a cost.
      if (c < 0.0f) continue;
      if (best_a < 0 || c < best) best_a = a, best_p = p, best = c;
    }
  }
  if (best_a < 0) return false;
  costs[best_a * num_proto + best_p] = 0.0f;
  *a_out = best_a;
  *p_out = best_p;
  return true;
}

acc_ncclResult_t coll_info_table(void* context, acc_ncclFunc_t coll, size_t bytes, int pipe_ops, float** cost_table,
                                 int num_algo, int num_proto, int reg_buff, int* channels) {
  if (!context) return acc_ncclSuccess;
  Context& ctx = *static_cast<Context*>(context);
  const int c = static_cast<int>(coll);
  if (c < 0 || c >= nccl_table::kCollectives) return acc_ncclSuccess;
  // NCCL passes its float[algorithms][protocols] array cast to float**.
  float* costs = reinterpret_cast<float*>(cost_table);
  const Table::Span s = ctx.table.candidates(c, bytes);
  for (const uint32_t* i = s.begin; i != s.end; ++i) {
    const Row& r = ctx.table.row(*i);
    if (!row_applies(r, pipe_ops, reg_buff)) continue;
    int a = kAny, p = kAny;
    if (!choose_in_table(r, costs, num_algo, num_proto, &a, &p)) continue;
    if (r.channels > 0 && channels) *channels = r.channels;
    ctx.note(c, a, p, r.chunk_bytes);
    return acc_ncclSuccess;
  }
  ctx.note(c, kAny, kAny, 0);  // NCCL's own choice, NCCL's own chunk
  return acc_ncclSuccess;
}

bool supported_v2(int algorithm, int collnet, int nvls) {
  switch (algorithm) {
    case ACC_NCCL_ALGO_COLLNET_DIRECT:
    case ACC_NCCL_ALGO_COLLNET_CHAIN:
      return collnet != 0;
    case ACC_NCCL_ALGO_NVLS:
    case ACC_NCCL_ALGO_NVLS_TREE:
      return nvls != 0;
    default:
      return algorithm >= 0 && algorithm < ACC_NCCL_NUM_ALGORITHMS;
  }
}

// v2 has no cost table: the plugin names the pair itself, so a row with only one side given
// can set channels but not the pair (v2 must set both or neither).
acc_ncclResult_t coll_info_v2(void* context, acc_ncclFunc_t coll, size_t bytes, int collnet, int nvls, int pipe_ops,
                              int* algorithm, int* protocol, int* channels) {
  if (!context) return acc_ncclSuccess;
  const Context& ctx = *static_cast<const Context*>(context);
  const Table::Span s = ctx.table.candidates(static_cast<int>(coll), bytes);
  for (const uint32_t* i = s.begin; i != s.end; ++i) {
    const Row& r = ctx.table.row(*i);
    // v2 does not say whether buffers are registered: only rows that do not care apply.
    if (!row_applies(r, pipe_ops, kAny) || r.reg_buff != kAny) continue;
    const bool pair = r.algorithm != kAny && r.protocol != kAny;
    if (pair && !supported_v2(r.algorithm, collnet, nvls)) continue;
    if (pair && algorithm && protocol) {
      *algorithm = r.algorithm;
      *protocol = r.protocol;
    }
    if (r.channels > 0 && channels) *channels = r.channels;
    return acc_ncclSuccess;
  }
  return acc_ncclSuccess;
}

// Called once per channel slice with the slice's bytes (not the collective's), after the pair is
// settled: the chunk comes from the row getCollInfo applied to this collective and pair, rounded
// down to the protocol's grain; below the grain NCCL's value stands (NCCL would round it to 0).
acc_ncclResult_t chunk_size_v6(void* context, acc_ncclFunc_t coll, size_t, int algorithm, int protocol, int,
                               size_t* chunk) {
  if (!context || !chunk) return acc_ncclSuccess;
  Context& ctx = *static_cast<Context*>(context);
  const int c = static_cast<int>(coll);
  if (c < 0 || c >= nccl_table::kCollectives || algorithm < 0 || algorithm >= nccl_table::kAlgorithms ||
      protocol < 0 || protocol >= nccl_table::kProtocols) {
    return acc_ncclSuccess;
  }
  const int64_t usable = usable_chunk(ctx.chunk_for(c, algorithm, protocol), protocol);
  if (usable > 0) *chunk = static_cast<size_t>(usable);
  return acc_ncclSuccess;
}

acc_ncclResult_t init_v2(size_t ranks, size_t nodes, acc_ncclDebugLogger_t log, void** context) {
  if (context) *context = make_context(ranks, nodes, log);
  return acc_ncclSuccess;
}

// v5 and later: the NVLink domain facts and NCCL's constants are not used (or changed), so one
// body serves every layout of them.
template <class NvlDomainInfo, class Constants>
acc_ncclResult_t init_v5(void** context, uint64_t, size_t ranks, size_t nodes, acc_ncclDebugLogger_t log,
                         NvlDomainInfo*, Constants*) {
  if (context) *context = make_context(ranks, nodes, log);
  return acc_ncclSuccess;
}

acc_ncclResult_t coll_info_v3(void* context, acc_ncclFunc_t coll, size_t bytes, int pipe_ops, float** cost_table,
                              int num_algo, int num_proto, int* channels) {
  // v3 does not say whether buffers are registered; rows that require either value do not apply.
  return coll_info_table(context, coll, bytes, pipe_ops, cost_table, num_algo, num_proto, -2, channels);
}

}  // namespace
}  // namespace acceltune::nccl_plugin

namespace np = acceltune::nccl_plugin;

#define ACCELTUNE_EXPORT extern "C" __attribute__((visibility("default")))

ACCELTUNE_EXPORT const acc_ncclTuner_v2_t ncclTunerPlugin_v2 = {"acceltune", np::init_v2, np::coll_info_v2,
                                                                np::destroy_context};
ACCELTUNE_EXPORT const acc_ncclTuner_v3_t ncclTunerPlugin_v3 = {"acceltune", np::init_v2, np::coll_info_v3,
                                                                np::destroy_context};
ACCELTUNE_EXPORT const acc_ncclTuner_v4_t ncclTunerPlugin_v4 = {"acceltune", np::init_v2, np::coll_info_table,
                                                                np::destroy_context};
ACCELTUNE_EXPORT const acc_ncclTuner_v5_t ncclTunerPlugin_v5 = {"acceltune",
                                                                np::init_v5<acc_ncclNvlDomainInfo_v5_t, acc_ncclTunerConstants_v5_t>,
                                                                np::coll_info_table, np::destroy_context};
ACCELTUNE_EXPORT const acc_ncclTuner_v6_t ncclTunerPlugin_v6 = {"acceltune",
                                                                np::init_v5<acc_ncclNvlDomainInfo_v6_t, acc_ncclTunerConstants_v6_t>,
                                                                np::coll_info_table, np::destroy_context, np::chunk_size_v6};
ACCELTUNE_EXPORT const acc_ncclTuner_v7_t ncclTunerPlugin_v7 = {"acceltune",
                                                                np::init_v5<acc_ncclNvlDomainInfo_v7_t, acc_ncclTunerConstants_v7_t>,
                                                                np::coll_info_table, np::destroy_context, np::chunk_size_v6};
