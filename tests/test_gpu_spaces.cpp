// What the GPU and RDMA kernels do without their hardware: the shipped spaces load and exclude
// the known invalid combinations, busbw factors, input validation (exit 2) and the one-line
// "needs ..." refusal (exit 1) on a machine without the device.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "kernels/nccl/nccl_common.hpp"
#include "kernels/shared/timed_external.hpp"
#include "tests/helpers.hpp"
#include "tuner/space.hpp"

namespace acceltune {
namespace {

using test::run_cli;

std::filesystem::path spaces_dir() { return test::spaces_dir(); }

Space load(const std::string& name) {
  auto s = Space::load_file(spaces_dir() / (name + ".json"));
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message);
  if (!s) throw std::runtime_error("space did not load");
  return std::move(*s);
}

// The default config with some params changed; fails the test on a value outside the domain.
Config with(const Space& s, const std::vector<std::pair<std::string, std::string>>& sets) {
  return test::config_with(s, sets);
}

bool has_device_files(const char* path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return false;
  if (!std::filesystem::is_directory(path, ec)) return true;
  return std::filesystem::directory_iterator(path, ec) != std::filesystem::directory_iterator();
}

const char* kGpuSpaces[] = {"cuda-copy",       "cuda-copy-d2h",      "cuda-copy-d2d",        "cuda-copy-peer",
                            "nccl-allreduce",  "nccl-allgather",     "nccl-reduce-scatter",  "nccl-broadcast",
                            "nccl-reduce",     "nccl-alltoall",      "nccl-sendrecv",        "nccl-allreduce-2node",
                            "verbs",           "verbs-read",         "verbs-send",           "verbs-write-lat"};

TEST(GpuSpaces, ShippedSpacesLoadWithValidDefaults) {
  for (const char* name : kGpuSpaces) {
    SCOPED_TRACE(name);
    const Space s = load(name);
    EXPECT_EQ(s.name(), name);
    EXPECT_TRUE(s.is_valid(s.default_config())) << s.why_invalid(s.default_config());
    EXPECT_GT(s.count_valid(), 1u);
    EXPECT_FALSE(s.sizes().empty());
  }
}

TEST(GpuSpaces, NcclSpacesBindAlgorithmProtocolAndChannelsAsTheExportExpects) {
  for (const char* name : {"nccl-allreduce", "nccl-allgather", "nccl-reduce-scatter", "nccl-broadcast", "nccl-reduce",
                           "nccl-alltoall", "nccl-sendrecv", "nccl-allreduce-2node"}) {
    SCOPED_TRACE(name);
    const Space s = load(name);
    ASSERT_TRUE(s.extra().contains("ranks"));
    ASSERT_TRUE(s.extra().contains("nodes"));
    auto ch = s.param_index("channels");
    ASSERT_TRUE(ch.has_value());
    EXPECT_TRUE(s.params()[*ch].env.empty()) << "channels is an ncclConfig_t field, applied per communicator";
    for (const auto& p : s.params()) {
      if (p.name == "algo") {
        EXPECT_EQ(p.env, "NCCL_ALGO");
      }
      if (p.name == "proto") {
        EXPECT_EQ(p.env, "NCCL_PROTO");
      }
      if (p.env == "NCCL_ALGO" || p.env == "NCCL_PROTO") {
        const auto& known = p.env == "NCCL_ALGO" ? nccl_algorithms() : nccl_protocols();
        for (const auto& v : p.values) EXPECT_NE(std::find(known.begin(), known.end(), to_string(v)), known.end());
      }
    }
  }
}

TEST(GpuSpaces, NcclConstraintsExcludeKnownInvalidCombinations) {
  const Space ar = load("nccl-allreduce");
  // NVLS and CollNet run the Simple protocol only.
  EXPECT_FALSE(ar.is_valid(with(ar, {{"algo", "NVLS"}, {"proto", "LL"}})));
  EXPECT_FALSE(ar.is_valid(with(ar, {{"algo", "CollNetDirect"}, {"proto", "LL128"}})));
  EXPECT_TRUE(ar.is_valid(with(ar, {{"algo", "NVLS"}, {"proto", "Simple"}})));
  EXPECT_TRUE(ar.is_valid(with(ar, {{"algo", "Ring"}, {"proto", "LL"}})));
  EXPECT_TRUE(ar.is_valid(with(ar, {{"algo", "Tree"}, {"proto", "LL128"}})));
  // The NVLS CTA count means nothing to the other algorithms.
  EXPECT_FALSE(ar.is_valid(with(ar, {{"algo", "Ring"}, {"nvls_ctas", "16"}})));
  EXPECT_TRUE(ar.is_valid(with(ar, {{"algo", "NVLS"}, {"proto", "Simple"}, {"nvls_ctas", "16"}})));
  // NVLSTree runs between nodes: not on the one node of this space, but across two.
  EXPECT_FALSE(ar.is_valid(with(ar, {{"algo", "NVLSTree"}, {"proto", "Simple"}})));
  const Space two = load("nccl-allreduce-2node");
  EXPECT_TRUE(two.is_valid(with(two, {{"algo", "NVLSTree"}, {"proto", "Simple"}})));

  // Collectives without Tree or NVLS do not offer them at all.
  for (const char* name : {"nccl-broadcast", "nccl-reduce"}) {
    const Space s = load(name);
    const Param& algo = s.params()[*s.param_index("algo")];
    for (const auto& v : algo.values) EXPECT_TRUE(to_string(v) == "default" || to_string(v) == "Ring") << name;
  }
  for (const char* name : {"nccl-allgather", "nccl-reduce-scatter"}) {
    const Space s = load(name);
    const Param& algo = s.params()[*s.param_index("algo")];
    for (const auto& v : algo.values) EXPECT_NE(to_string(v), "Tree") << name;
    EXPECT_FALSE(s.is_valid(with(s, {{"algo", "PAT"}, {"proto", "LL"}}))) << name;
    // PAT runs with one GPU per node: never on one node of several GPUs.
    EXPECT_FALSE(s.is_valid(with(s, {{"algo", "PAT"}, {"proto", "Simple"}}))) << name;
    EXPECT_FALSE(s.is_valid(with(s, {{"algo", "NVLS"}, {"proto", "LL128"}}))) << name;
    EXPECT_TRUE(s.is_valid(with(s, {{"algo", "Ring"}, {"proto", "LL128"}}))) << name;
  }
  // Point-to-point collectives have no algorithm to choose.
  for (const char* name : {"nccl-alltoall", "nccl-sendrecv"}) EXPECT_FALSE(load(name).param_index("algo").has_value());
}

TEST(GpuSpaces, NcclHardwareRulesDependOnTheMachine) {
  NcclHardware plain;
  plain.compute_major = 9;
  EXPECT_NE(nccl_hardware_excludes(NcclOp::allreduce, "NVLS", "Simple", plain), "");
  EXPECT_NE(nccl_hardware_excludes(NcclOp::allreduce, "NVLSTree", "default", plain), "");
  EXPECT_NE(nccl_hardware_excludes(NcclOp::allreduce, "CollNetDirect", "Simple", plain), "");
  EXPECT_EQ(nccl_hardware_excludes(NcclOp::allreduce, "Ring", "LL128", plain), "");
  NcclHardware nvswitch = plain;
  nvswitch.multicast = true;
  EXPECT_EQ(nccl_hardware_excludes(NcclOp::allreduce, "NVLS", "Simple", nvswitch), "");
  NcclHardware pascal;
  pascal.compute_major = 6;
  EXPECT_NE(nccl_hardware_excludes(NcclOp::allreduce, "Ring", "LL128", pascal), "");
  EXPECT_EQ(nccl_hardware_excludes(NcclOp::allreduce, "Ring", "LL", pascal), "");
  // NVLSTree needs more than one node, PAT one GPU per node, whatever the space says.
  NcclHardware two_nodes = nvswitch;
  two_nodes.nodes = 2;
  two_nodes.ranks_per_node = 8;
  EXPECT_NE(nccl_hardware_excludes(NcclOp::allreduce, "NVLSTree", "Simple", nvswitch), "");
  EXPECT_EQ(nccl_hardware_excludes(NcclOp::allreduce, "NVLSTree", "Simple", two_nodes), "");
  EXPECT_NE(nccl_hardware_excludes(NcclOp::allgather, "PAT", "Simple", two_nodes), "");
  NcclHardware one_per_node = plain;
  one_per_node.nodes = 4;
  EXPECT_EQ(nccl_hardware_excludes(NcclOp::allgather, "PAT", "Simple", one_per_node), "");
}

// nccl-tests reports the mean of the ranks' times by default (-a 1); the slowest is kept too.
TEST(GpuSpaces, NcclRankTimesAreTheMeanByDefaultAndTheSlowestToo) {
  const RankTimes t = nccl_combine_rank_times({1.0, 2.0, 6.0});
  EXPECT_DOUBLE_EQ(t.mean, 3.0);
  EXPECT_DOUBLE_EQ(t.slowest, 6.0);
  EXPECT_DOUBLE_EQ(nccl_combine_rank_times({}).mean, 0.0);
  EXPECT_EQ(nccl_rank_time_from_string("mean"), RankTime::mean);
  EXPECT_EQ(nccl_rank_time_from_string("slowest"), RankTime::slowest);
  EXPECT_FALSE(nccl_rank_time_from_string("max").has_value());
  EXPECT_EQ(nccl_value_is(RankTime::mean, true), "busbw from the mean of the ranks' times (nccl-tests' default)");
  EXPECT_EQ(nccl_value_is(RankTime::slowest, false), "algbw from the slowest rank's time (nccl-tests -a 3)");
}

TEST(GpuSpaces, NcclRankCountComesFromTheSpaceAcrossNodes) {
  std::string why;
  EXPECT_EQ(nccl_rank_count(Json{{"ranks", 4}}, 8, &why), 4);
  EXPECT_EQ(nccl_rank_count(Json{{"ranks", "gpus"}, {"nodes", 1}}, 8, &why), 8);
  EXPECT_EQ(nccl_rank_count(Json::object(), 2, &why), 2);
  // Across nodes this node's GPU count says nothing of the others'.
  EXPECT_EQ(nccl_rank_count(Json{{"ranks", "gpus"}, {"nodes", 2}, {"gpus_per_node", 4}}, 8, &why), 8);
  EXPECT_EQ(nccl_rank_count(Json{{"ranks", "gpus"}, {"nodes", 3}}, 8, &why), 0);
  EXPECT_NE(why.find("needs 'gpus_per_node'"), std::string::npos) << why;
  // The shipped two-node space says how many.
  EXPECT_EQ(nccl_rank_count(load("nccl-allreduce-2node").extra(), 1, &why), 16);
}

// A rank started by a launcher: who it is, and which GPU (its local rank modulo what it sees).
TEST(GpuSpaces, NcclRanksTakeTheirIdentityAndGpuFromTheLauncher) {
  static std::map<std::string, std::string> env;
  auto get = [](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env = {{"OMPI_COMM_WORLD_RANK", "9"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "16"}};
  LauncherIdentity id = nccl_launcher_identity(get);
  EXPECT_EQ(id.rank, 9);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 16);
  env = {{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "5"}, {"SLURM_NTASKS", "8"}};
  id = nccl_launcher_identity(get);
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.local_rank, 5);
  EXPECT_EQ(id.world_size, 8);
  env = {{"PMI_RANK", "x"}};
  EXPECT_EQ(nccl_launcher_identity(get).rank, -1);
  // Slurm narrowed CUDA_VISIBLE_DEVICES to one GPU per rank: local rank 5 uses device 0.
  EXPECT_EQ(nccl_device_for(5, 1), 0);
  EXPECT_EQ(nccl_device_for(5, 8), 5);
  EXPECT_EQ(nccl_device_for(9, 8), 1);
  EXPECT_EQ(nccl_device_for(-1, 8), 0);
  EXPECT_EQ(nccl_device_for(3, 0), 0);
}

// Every rank must see the trial's NCCL_ variables: forwarded the way the launcher forwards.
TEST(GpuSpaces, NcclForwardsEveryParamVariableToRemoteRanks) {
  EXPECT_EQ(nccl_forward_env_args(LauncherKind::open_mpi, {"NCCL_ALGO", "NCCL_PROTO"}),
            (std::vector<std::string>{"-x", "NCCL_ALGO", "-x", "NCCL_PROTO"}));
  EXPECT_EQ(nccl_forward_env_args(LauncherKind::hydra, {"NCCL_ALGO", "NCCL_PROTO"}),
            (std::vector<std::string>{"-genvlist", "NCCL_ALGO,NCCL_PROTO"}));
  EXPECT_TRUE(nccl_forward_env_args(LauncherKind::other, {"NCCL_ALGO"}).empty());
  EXPECT_TRUE(nccl_forward_env_args(LauncherKind::open_mpi, {}).empty());
  EXPECT_EQ(nccl_launcher_kind("HYDRA build details:\n    Version: 4.1"), LauncherKind::hydra);
  EXPECT_EQ(nccl_launcher_kind("slurm 23.02.7"), LauncherKind::other);
  // This machine's mpirun says what it is.
  std::string out;
  if (FILE* f = ::popen("mpirun --version 2>&1", "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    if (::pclose(f) != 0) out.clear();
  }
  if (out.empty()) GTEST_SKIP() << "no mpirun on this machine";
  EXPECT_EQ(nccl_launcher_kind(out), LauncherKind::open_mpi) << out;
}


TEST(GpuSpaces, BusBandwidthFactorsAreThoseOfNcclTests) {
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::allreduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::allreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::allreduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::allgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::reduce_scatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::alltoall, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::reduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(nccl_busbw_factor(NcclOp::sendrecv, 8), 1.0);
  for (const auto& n : nccl_op_names()) {
    auto op = nccl_op_from_string(n);
    ASSERT_TRUE(op.has_value()) << n;
    EXPECT_EQ(to_string(*op), n);
  }
  EXPECT_FALSE(nccl_op_from_string("allreduce2").has_value());
}

TEST(GpuSpaces, CollectiveSizesSplitEvenlyBetweenRanks) {
  // 1000 bytes = 250 floats; split three ways that is 83 each.
  EXPECT_EQ(nccl_effective_bytes(NcclOp::allgather, 1000, 3), 83u * 3 * 4);
  EXPECT_EQ(nccl_effective_bytes(NcclOp::alltoall, 1000, 3), 83u * 3 * 4);
  EXPECT_EQ(nccl_effective_bytes(NcclOp::allreduce, 1002, 3), 1000u);
  EXPECT_EQ(nccl_effective_bytes(NcclOp::broadcast, 1 << 20, 8), 1u << 20);
  EXPECT_EQ(nccl_effective_bytes(NcclOp::reduce_scatter, 4, 2), 0u);
}

TEST(GpuSpaces, ExternallyTimedRunsFollowTheStoppingRule) {
  MeasureSettings ms;
  ms.warmup_seconds = 0.002;
  ms.min_sample_seconds = 0.0005;
  int64_t total_runs = 0;
  // A device that takes 100 us per repetition, exactly: the interval closes at the minimum samples.
  const Measurement m = measure_external(
      1000000, [&](int64_t runs) -> Expected<double> {
        total_runs += runs;
        return static_cast<double>(runs) * 100e-6;
      }, ms);
  EXPECT_EQ(m.state, State::ok) << m.error;
  // 500 us samples of 100 us runs (one more where the sums round up)
  EXPECT_GE(m.runs_per_sample, 5);
  EXPECT_LE(m.runs_per_sample, 6);
  EXPECT_EQ(static_cast<int>(m.samples_seconds.size()), ms.min_samples);
  EXPECT_NEAR(m.median_seconds, 100e-6, 1e-12);
  EXPECT_NEAR(m.value, 10.0, 1e-9);  // 1e6 bytes in 100 us
  EXPECT_GE(total_runs, 20 + m.runs_per_sample * ms.min_samples);  // 2 ms of warm-up, then the samples
  EXPECT_LE(total_runs, 21 + m.runs_per_sample * ms.min_samples);

  int calls = 0;
  const Measurement bad = measure_external(
      4096, [&](int64_t) -> Expected<double> {
        if (++calls > 3) return runtime_error("rank 1: NCCL: unhandled system error");
        return 1e-3;
      }, ms);
  EXPECT_EQ(bad.state, State::failed);
  EXPECT_EQ(bad.error, "rank 1: NCCL: unhandled system error");
}

TEST(GpuSpaces, DefaultValuedNcclVariablesAreUnsetBeforeNcclStarts) {
  ::setenv("NCCL_ALGO", "default", 1);
  ::setenv("NCCL_BUFFSIZE", "", 1);
  ::setenv("NCCL_PROTO", "LL128", 1);
  ::setenv("ACCELTUNE_TEST_OTHER", "default", 1);
  nccl_unset_default_env();
  EXPECT_EQ(std::getenv("NCCL_ALGO"), nullptr);
  EXPECT_EQ(std::getenv("NCCL_BUFFSIZE"), nullptr);
  ASSERT_NE(std::getenv("NCCL_PROTO"), nullptr);
  EXPECT_STREQ(std::getenv("NCCL_PROTO"), "LL128");
  EXPECT_STREQ(std::getenv("ACCELTUNE_TEST_OTHER"), "default");  // only NCCL's variables
  ::unsetenv("NCCL_PROTO");
  ::unsetenv("ACCELTUNE_TEST_OTHER");
}

TEST(GpuSpaces, CudaCopyAndVerbsConstraints) {
  const Space h2d = load("cuda-copy");
  // A copy kernel cannot address pageable memory on most GPUs; the SM knobs mean nothing to the copy engine.
  EXPECT_FALSE(h2d.is_valid(with(h2d, {{"engine", "sm"}, {"host_memory", "pageable"}})));
  EXPECT_TRUE(h2d.is_valid(with(h2d, {{"engine", "sm"}, {"host_memory", "pinned"}, {"vector_bytes", "8"}})));
  EXPECT_FALSE(h2d.is_valid(with(h2d, {{"engine", "copy"}, {"threads_per_block", "512"}})));
  EXPECT_FALSE(h2d.is_valid(with(h2d, {{"streams", "2"}})));  // one piece cannot be spread over streams
  EXPECT_TRUE(h2d.is_valid(with(h2d, {{"streams", "2"}, {"chunk", "1048576"}})));
  EXPECT_FALSE(load("cuda-copy-d2d").param_index("host_memory").has_value());

  const Space v = load("verbs");
  EXPECT_FALSE(v.is_valid(with(v, {{"signal_every", "16"}, {"outstanding", "4"}})));
  EXPECT_TRUE(v.is_valid(with(v, {{"signal_every", "4"}, {"outstanding", "4"}})));
  EXPECT_FALSE(load("verbs-read").param_index("inline_bytes").has_value());
}

// The kernel's refusal on this machine: one line on stderr, exit 1; or a skip where the
// hardware is there (then test_gpu / test_verbs measure instead).
void expect_needs(const std::string& space, const std::string& needs, bool built, const char* device_path) {
  if (!built) GTEST_SKIP() << "this build has no " << space << " kernel (its library was not found at configure time)";
  if (has_device_files(device_path)) GTEST_SKIP() << device_path << " exists: this machine has the device, so the kernel runs";
  auto r = run_cli({"bench", "--space", space});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find(needs), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(GpuSpaces, CudaCopyWithoutGpuSaysSoInOneLine) {
  expect_needs("cuda-copy", "acceltune: kernel 'cuda-copy' needs a CUDA GPU; none found", ACCELTUNE_TEST_WITH_CUDA,
               "/dev/nvidiactl");
}

TEST(GpuSpaces, NcclWithoutGpuSaysSoInOneLine) {
  expect_needs("nccl-allreduce", "acceltune: kernel 'nccl' needs a CUDA GPU; none found", ACCELTUNE_TEST_WITH_NCCL,
               "/dev/nvidiactl");
}

TEST(GpuSpaces, VerbsWithoutDeviceSaysSoInOneLine) {
  expect_needs("verbs", "acceltune: kernel 'verbs' needs an RDMA device; none found", ACCELTUNE_TEST_WITH_VERBS,
               "/sys/class/infiniband");
}

// A space file that changes one field of a shipped space.
std::filesystem::path variant(const test::TempDir& dir, const std::string& shipped, const std::function<void(Json&)>& edit) {
  Json j = Json::parse(test::read_file(spaces_dir() / (shipped + ".json")));
  edit(j);
  const auto path = dir / (shipped + "-variant.json");
  test::write_file(path, j.dump(2));
  return path;
}

void set_values(Json& space, const std::string& param, Json values, Json def) {
  for (auto& p : space["params"]) {
    if (p["name"] == param) {
      p.erase("min");
      p.erase("max");
      p["kind"] = values[0].is_string() ? "categorical" : "ordinal";
      p["values"] = std::move(values);
      p["default"] = std::move(def);
      return;
    }
  }
  ADD_FAILURE() << "no param " << param;
}

void expect_input_error(const std::filesystem::path& space, const std::string& what) {
  auto r = run_cli({"bench", "--space", space.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

TEST(GpuSpaces, VerbsRejectsBadParamValuesAsInputErrors) {
  if (!ACCELTUNE_TEST_WITH_VERBS) GTEST_SKIP() << "this build has no verbs kernel (libibverbs was not found)";
  test::TempDir dir;
  expect_input_error(variant(dir, "verbs", [](Json& j) { set_values(j, "mtu", {1000, 1024}, 1024); }), "param 'mtu' value 1000");
  expect_input_error(variant(dir, "verbs", [](Json& j) { set_values(j, "qps", {0, 1}, 1); }), "param 'qps' value 0");
  expect_input_error(variant(dir, "verbs", [](Json& j) { set_values(j, "outstanding", {16, 5000}, 16); }),
                     "param 'outstanding' value 5000");
  expect_input_error(variant(dir, "verbs", [](Json& j) { set_values(j, "inline_bytes", {0, 2048}, 0); }),
                     "param 'inline_bytes' value 2048");
  expect_input_error(variant(dir, "verbs", [](Json& j) { j["operation"] = "atomic"; }), "operation 'atomic'");
  expect_input_error(variant(dir, "verbs", [](Json& j) { j["port"] = "one"; }), "field 'port'");
}

TEST(GpuSpaces, CudaAndNcclRejectBadParamValuesAsInputErrors) {
  test::TempDir dir;
  if (ACCELTUNE_TEST_WITH_CUDA) {
    expect_input_error(variant(dir, "cuda-copy", [](Json& j) { set_values(j, "vector_bytes", {3, 16}, 16); }),
                       "param 'vector_bytes' value 3");
    expect_input_error(variant(dir, "cuda-copy", [](Json& j) { j["operation"] = "h2h"; }), "operation 'h2h'");
    expect_input_error(variant(dir, "cuda-copy-d2d", [](Json& j) {
                         j["params"].push_back(Json{{"name", "host_memory"}, {"kind", "categorical"},
                                                    {"values", {"pageable"}}, {"default", "pageable"}});
                       }), "param 'host_memory' has no meaning for operation 'd2d'");
  }
  if (ACCELTUNE_TEST_WITH_NCCL) {
    expect_input_error(variant(dir, "nccl-broadcast", [](Json& j) { set_values(j, "algo", {"default", "Bogus"}, "default"); }),
                       "param 'algo' value 'Bogus'");
    expect_input_error(variant(dir, "nccl-allreduce", [](Json& j) { j["operation"] = "scan"; }), "operation 'scan'");
    expect_input_error(variant(dir, "nccl-allreduce", [](Json& j) { j["nodes"] = 2; }), "needs a 'launcher' field");
    expect_input_error(variant(dir, "nccl-allreduce", [](Json& j) { j["ranks"] = 0; }), "field 'ranks'");
  }
  if (!ACCELTUNE_TEST_WITH_CUDA && !ACCELTUNE_TEST_WITH_NCCL) GTEST_SKIP() << "this build has neither CUDA nor NCCL";
}

// One GPU is a one-rank communicator, for which NCCL never consults a tuner: a search refuses
// it (exit 2) before it needs a GPU; bench still measures it.
TEST(GpuSpaces, NcclSearchWithOneRankHasNothingToTune) {
  if (!ACCELTUNE_TEST_WITH_NCCL) GTEST_SKIP() << "this build has no nccl kernel";
  EXPECT_NE(nccl_nothing_to_tune(1), "");
  EXPECT_EQ(nccl_nothing_to_tune(2), "");
  test::TempDir dir;
  const auto one = variant(dir, "nccl-allreduce", [](Json& j) { j["ranks"] = 1; });
  auto r = run_cli({"search", "--space", one.string(), "--out", (dir / "s").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("nothing to tune with one rank"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "s"));
  auto b = run_cli({"bench", "--space", one.string()});
  EXPECT_EQ(b.err.find("nothing to tune"), std::string::npos) << b.err;
}

}  // namespace
}  // namespace acceltune
