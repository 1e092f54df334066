// libnccl-tuner-acceltune.so: an NCCL tuner plugin that applies the table `acceltune export
// --format nccl-tuner` writes. NCCL_TUNER_PLUGIN=acceltune loads it; the table's path comes from
// ACCELTUNE_NCCL_TUNER_TABLE, else NCCL_TUNER_CONFIG_FILE (the variable NCCL's example tuner
// reads, so its files keep working). Every interface version from v2 to v7 is exported.
//
// Whatever goes wrong, NCCL's own choice stands: init always succeeds (a context with an empty
// table when the file is missing or bad, reported once through NCCL's logger), and the per-call
// functions never allocate, never log on the hot path and always return success.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "tools/nccl-plugin/nccl_tuner_abi.h"
#include "tools/nccl-plugin/table.hpp"
#include "tuner/regular_file.hpp"

namespace acceltune::nccl_plugin {
namespace {

// Beyond this a table is surely not ours, and the per-segment row lists would grow large.
constexpr size_t kMaxRows = 10000;
constexpr size_t kMaxTableBytes = 16u << 20;

struct Context {
  Table table;
  acc_ncclDebugLogger_t log = nullptr;
};

// Where allocation fails NCCL still gets a valid context: this one, whose table is empty.
Context g_empty_context;

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
  ParseResult parsed = parse_table(text);
  if (!parsed.error.empty()) {
    say(ctx.log, ACC_NCCL_LOG_WARN, "acceltune tuner: %s: %s; the table is not used, NCCL chooses", path,
        parsed.error.c_str());
    return;
  }
  if (parsed.rows.size() > kMaxRows) {
    say(ctx.log, ACC_NCCL_LOG_WARN, "acceltune tuner: %s has %zu rows, more than %zu; the table is not used", path,
        parsed.rows.size(), kMaxRows);
    return;
  }
  ctx.table.build(parsed.rows, nodes, ranks);
  if (ctx.table.size() == 0 && !parsed.rows.empty()) {
    say(ctx.log, ACC_NCCL_LOG_WARN,
        "acceltune tuner: %s: none of its %zu rows is for %zu nodes and %zu ranks; NCCL chooses", path,
        parsed.rows.size(), nodes, ranks);
    return;
  }
  say(ctx.log, ACC_NCCL_LOG_INFO, "acceltune tuner: %s: %zu of %zu rows apply to %zu nodes, %zu ranks", path,
      ctx.table.size(), parsed.rows.size(), nodes, ranks);
}

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
// so the next matching row gets its turn.
bool choose_in_table(const Row& r, float* costs, int num_algo, int num_proto) {
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
  return true;
}

acc_ncclResult_t coll_info_table(void* context, acc_ncclFunc_t coll, size_t bytes, int pipe_ops, float** cost_table,
                                 int num_algo, int num_proto, int reg_buff, int* channels) {
  if (!context) return acc_ncclSuccess;
  const Context& ctx = *static_cast<const Context*>(context);
  // NCCL passes its float[algorithms][protocols] array cast to float**.
  float* costs = reinterpret_cast<float*>(cost_table);
  const Table::Span s = ctx.table.candidates(static_cast<int>(coll), bytes);
  for (const uint32_t* i = s.begin; i != s.end; ++i) {
    const Row& r = ctx.table.row(*i);
    if (!row_applies(r, pipe_ops, reg_buff)) continue;
    if (!choose_in_table(r, costs, num_algo, num_proto)) continue;
    if (r.channels > 0 && channels) *channels = r.channels;
    return acc_ncclSuccess;
  }
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

acc_ncclResult_t chunk_size_v6(void* context, acc_ncclFunc_t coll, size_t bytes, int algorithm, int protocol, int,
                               size_t* chunk) {
  if (!context || !chunk) return acc_ncclSuccess;
  const Context& ctx = *static_cast<const Context*>(context);
  const Table::Span s = ctx.table.candidates(static_cast<int>(coll), bytes);
  for (const uint32_t* i = s.begin; i != s.end; ++i) {
    const Row& r = ctx.table.row(*i);
    if (r.algorithm != kAny && r.algorithm != algorithm) continue;
    if (r.protocol != kAny && r.protocol != protocol) continue;
    if (r.chunk_bytes > 0) *chunk = static_cast<size_t>(r.chunk_bytes);
    return acc_ncclSuccess;
  }
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
