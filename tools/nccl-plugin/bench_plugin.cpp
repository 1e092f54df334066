// Per-call decision cost of the NCCL tuner plugin with a 100-row table, called through the
// dlopen()ed interface as NCCL calls it: a size inside a row (hit) and a size no row covers
// (miss), for the cost-table interface and the chunk-size hook, through the newest interface
// (v7). NCCL asks for chunks after getCollInfo decided the collective, once per channel slice;
// so does the chunk benchmark, and the pair benchmark times one decision with two slices.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tools/nccl-plugin/nccl_tuner_abi.h"

namespace {

struct Loaded {
  void* lib = nullptr;
  const acc_ncclTuner_v7_t* v7 = nullptr;
  void* context = nullptr;
  std::string table_path;

  Loaded() {
    // 100 rows: 20 disjoint size ranges for each of the five collectives, each range 64 KiB wide,
    // with gaps between them for the misses.
    std::string tmpl = (std::filesystem::temp_directory_path() / "acceltune-bench-XXXXXX").string();
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) return;
    table_path = tmpl;
    std::string text =
        "# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n";
    const char* colls[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
    for (const char* c : colls) {
      for (int k = 0; k < 20; ++k) {
        const unsigned long lo = static_cast<unsigned long>(k) * 131072ul;
        text += std::string(c) + "," + std::to_string(lo) + "," + std::to_string(lo + 65535) + "," +
                (k % 2 ? "tree" : "ring") + "," + (k % 3 ? "simple" : "ll128") + ",8,-1,-1,-1,-1,524288\n";
      }
    }
    if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return;
    close(fd);
    setenv("ACCELTUNE_NCCL_TUNER_TABLE", table_path.c_str(), 1);
    lib = dlopen(ACCELTUNE_NCCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    v7 = static_cast<const acc_ncclTuner_v7_t*>(dlsym(lib, "ncclTunerPlugin_v7"));
    if (v7) v7->init(&context, 1, 8, 1, nullptr, nullptr, nullptr);
  }
  ~Loaded() {
    if (v7 && context) v7->finalize(context);
    if (lib) dlclose(lib);
    if (!table_path.empty()) unlink(table_path.c_str());
  }
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

// The loaded plugin, or null with the benchmark marked skipped.
Loaded* ready(benchmark::State& state) {
  Loaded& l = loaded();
  if (l.v7 && l.context) return &l;
  state.SkipWithError("the plugin did not load");
  return nullptr;
}

// One getCollInfo as NCCL makes it; the cost table is refilled first.
void decide(Loaded& l, size_t bytes, float (&costs)[ACC_NCCL_NUM_ALGORITHMS][ACC_NCCL_NUM_PROTOCOLS]) {
  for (auto& row : costs) {
    for (float& c : row) c = 10.0f;
  }
  costs[ACC_NCCL_ALGO_NVLS][ACC_NCCL_PROTO_SIMPLE] = ACC_NCCL_ALGO_PROTO_IGNORE;
  benchmark::ClobberMemory();
  int channels = 0;
  l.v7->getCollInfo(l.context, acc_ncclFuncAllReduce, bytes, 1, reinterpret_cast<float**>(costs),
                    ACC_NCCL_NUM_ALGORITHMS, ACC_NCCL_NUM_PROTOCOLS, 0, &channels);
  benchmark::DoNotOptimize(channels);
}

void coll_info(benchmark::State& state, size_t bytes) {
  Loaded* lp = ready(state);
  if (!lp) return;
  Loaded& l = *lp;
  float costs[ACC_NCCL_NUM_ALGORITHMS][ACC_NCCL_NUM_PROTOCOLS];
  for (auto _ : state) {
    decide(l, bytes, costs);
    benchmark::DoNotOptimize(costs);
  }
}

// The cost-table reset is part of the loop above; this measures it alone, to subtract.
void reset_only(benchmark::State& state) {
  float costs[ACC_NCCL_NUM_ALGORITHMS][ACC_NCCL_NUM_PROTOCOLS];
  for (auto _ : state) {
    for (auto& row : costs) {
      for (float& c : row) c = 10.0f;
    }
    costs[ACC_NCCL_ALGO_NVLS][ACC_NCCL_PROTO_SIMPLE] = ACC_NCCL_ALGO_PROTO_IGNORE;
    benchmark::ClobberMemory();
    benchmark::DoNotOptimize(costs);
  }
}

// getChunkSize for the slices of a collective getCollInfo decided at `bytes` (ring/LL128 there).
void chunk_size(benchmark::State& state, size_t bytes) {
  Loaded* lp = ready(state);
  if (!lp) return;
  Loaded& l = *lp;
  float costs[ACC_NCCL_NUM_ALGORITHMS][ACC_NCCL_NUM_PROTOCOLS];
  decide(l, bytes, costs);
  for (auto _ : state) {
    size_t chunk = 131072;
    l.v7->getChunkSize(l.context, acc_ncclFuncAllReduce, 65536, ACC_NCCL_ALGO_RING, ACC_NCCL_PROTO_LL128, 1, &chunk);
    benchmark::DoNotOptimize(chunk);
  }
}

// One collective as NCCL asks about it: getCollInfo, then getChunkSize for two channel slices.
void collective(benchmark::State& state, size_t bytes) {
  Loaded* lp = ready(state);
  if (!lp) return;
  Loaded& l = *lp;
  float costs[ACC_NCCL_NUM_ALGORITHMS][ACC_NCCL_NUM_PROTOCOLS];
  for (auto _ : state) {
    decide(l, bytes, costs);
    benchmark::DoNotOptimize(costs);
    for (size_t slice : {65536ul, 4096ul}) {
      size_t chunk = 131072;
      l.v7->getChunkSize(l.context, acc_ncclFuncAllReduce, slice, ACC_NCCL_ALGO_RING, ACC_NCCL_PROTO_LL128, 1, &chunk);
      benchmark::DoNotOptimize(chunk);
    }
  }
}

}  // namespace

BENCHMARK_CAPTURE(coll_info, hit, 19ul * 131072ul + 1000ul);    // the last allreduce row
BENCHMARK_CAPTURE(coll_info, miss, 19ul * 131072ul + 70000ul);  // in the gap after it
BENCHMARK(reset_only);
BENCHMARK_CAPTURE(chunk_size, hit, 18ul * 131072ul + 1000ul);  // ring/LL128 with a chunk
BENCHMARK_CAPTURE(chunk_size, miss, 100ul * 131072ul);          // NCCL decided: its own chunk
BENCHMARK_CAPTURE(collective, hit, 18ul * 131072ul + 1000ul);
BENCHMARK_CAPTURE(collective, miss, 100ul * 131072ul);

BENCHMARK_MAIN();
