// What acceltune_apply costs a job. A job calls it once, so the figure that counts is the first
// call in a fresh process (it reads this machine's fingerprint fields then): BM_FirstApply starts
// this program again per iteration (`bench_loader --apply-once PATH`, a fresh process as a job
// is), which times one call and reports that time alone. BM_LoaderFields is
// that reading by itself, BM_ApplyAgain a second call in the same process (the parse and check).
// The configuration is an env export of this machine (fingerprint fields included), or the
// study directory named by ACCELTUNE_BENCH_STUDY.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "acceltune/loader.h"
#include "tuner/loader_fields.hpp"

namespace {

const std::string& config_path() {
  static const std::string path = [] {
    if (const char* study = std::getenv("ACCELTUNE_BENCH_STUDY")) return std::string(study);
    const std::string p = (std::filesystem::temp_directory_path() / "acceltune-bench-loader.env").string();
    FILE* f = std::fopen(p.c_str(), "w");
    if (!f) return p;
    std::fprintf(f, "# acceltune: space nccl-allreduce, kernel nccl\n# acceltune fingerprint_fields: %s\n",
                 acceltune::loader_fields().dump().c_str());
    std::fprintf(f, "NCCL_ALGO=Ring\nNCCL_PROTO=LL128\nNCCL_BUFFSIZE=8388608\nNCCL_NTHREADS=512\n");
    std::fclose(f);
    return p;
  }();
  return path;
}

std::string& self_path() {
  static std::string path;
  return path;
}

void BM_FirstApply(benchmark::State& state) {
  const std::string& path = config_path();
  const std::string command = self_path() + " --apply-once " + path;
  for (auto _ : state) {
    FILE* p = popen(command.c_str(), "r");
    double us = -1;
    if (!p || std::fscanf(p, "%lf", &us) != 1) us = -1;
    if (p) pclose(p);
    if (us < 0) {
      state.SkipWithError("acceltune_apply failed in the fresh process");
      return;
    }
    state.SetIterationTime(us * 1e-6);
  }
}
BENCHMARK(BM_FirstApply)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_LoaderFields(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(acceltune::loader_fields());
}
BENCHMARK(BM_LoaderFields)->Unit(benchmark::kMicrosecond);

void BM_ApplyAgain(benchmark::State& state) {
  const std::string& path = config_path();
  if (acceltune_apply(path.c_str(), ACCELTUNE_DRY_RUN) != ACCELTUNE_OK) {
    state.SkipWithError(acceltune_last_error());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(acceltune_apply(path.c_str(), ACCELTUNE_DRY_RUN));
}
BENCHMARK(BM_ApplyAgain)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--apply-once") {
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = acceltune_apply(argv[2], ACCELTUNE_DRY_RUN);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.3f\n", rc == ACCELTUNE_OK ? us : -1.0);
    return rc;
  }
  self_path() = argv[0];
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
