// The mpi-coll kernel with a real mpirun: searches in both modes (launched per trial, and inside
// mpirun), the ranks' agreement on every outcome, a rank that dies, the exports that Open MPI and
// MPICH read, and ranks on two network namespaces as two hosts.
#include <gtest/gtest.h>

#include <algorithm>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "tests/helpers.hpp"
#include "tuner/best.hpp"
#include "tuner/binary.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string binary() { return test::worker_command().front(); }

// Open MPI refuses root unless told; the tests run as whoever runs them.
const char* kMpiEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";

struct Shell {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};

Shell sh(const std::string& command) {
  Shell r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<Json> jsonl(const fs::path& p) {
  std::vector<Json> out;
  std::ifstream f(p);
  for (std::string line; std::getline(f, line);) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

#define REQUIRE_MPIRUN() \
  if (!test::have_program("mpirun")) GTEST_SKIP() << "mpirun is not installed (Debian package openmpi-bin)"

const char* kTiny = " --budget 4 --max-seconds 0.05 --certify-rounds 2 --certify-top 1 --sizes 4K,256K";

// --ranks sets the rank count without editing the space: the ranks measured say so.
TEST(MpiColl, RanksOptionRunsThatManyRanks) {
  REQUIRE_MPIRUN();
  TempDir dir;
  const auto r = sh(fmt::format("cd {} && {} {} search --space mpi-allreduce --ranks 3 --budget 1 --sizes 4K "
                                "--max-seconds 0.05 --certify-top 0 --verify-rounds 0 --out study",
                                dir.path().string(), kMpiEnv, binary()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json study = Json::parse(test::read_file(dir / "study/study.json"));
  EXPECT_EQ(study["workload"]["ranks"], 3) << study.dump();
  const auto trials = jsonl(dir / "study/trials.jsonl");
  ASSERT_EQ(trials.size(), 1u);
  const Json m = trials[0]["measurements"].at(0);
  EXPECT_EQ(m["details"]["ranks"], 3) << m.dump();
  EXPECT_NEAR(m["details"]["busbw_factor"].get<double>(), 4.0 / 3.0, 1e-9);  // 2(n-1)/n
}

TEST(MpiColl, LauncherModeSearchCertifiesABest) {
  REQUIRE_MPIRUN();
  TempDir dir;
  const auto r = sh(fmt::format("cd {} && {} {} search --space mpi-allreduce{} --out study", dir.path().string(),
                                kMpiEnv, binary(), kTiny));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json study = Json::parse(test::read_file(dir / "study/study.json"));
  EXPECT_EQ(study["workload"]["ranks"], 2) << study.dump();
  const Json best = Json::parse(test::read_file(dir / "study/best.json"));
  EXPECT_TRUE(best.value("certified", false)) << best.dump();
  const auto trials = jsonl(dir / "study/trials.jsonl");
  ASSERT_EQ(trials.size(), 4u);
  for (const auto& t : trials) {
    ASSERT_EQ(t["state"], "ok") << t.dump();
    for (const auto& m : t["measurements"]) {
      EXPECT_EQ(m["details"]["objective"], "busbw");
      EXPECT_EQ(m["details"]["ranks"], 2);
      // busbw of allreduce on 2 ranks is algbw x 2(n-1)/n = algbw.
      EXPECT_DOUBLE_EQ(m["details"]["busbw_factor"].get<double>(), 1.0);
      EXPECT_GT(m["value"].get<double>(), 0.0);
    }
  }
  // The export is accepted by Open MPI: coll/tuned reads it without complaint.
  const auto e = sh(fmt::format("cd {} && {} export study --format ompi-rules -o rules.txt", dir.path().string(), binary()));
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const auto run = sh(fmt::format("cd {} && {} mpirun -np 2 --bind-to none --mca coll_tuned_use_dynamic_rules 1 --mca "
                                  "coll_tuned_dynamic_rules_filename rules.txt --mca coll_base_verbose 1 "
                                  "--mca coll_tuned_verbose 1 true",
                                  dir.path().string(), kMpiEnv));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find("bad configure file"), std::string::npos) << run.output;
}

// Runs `mpirun -np N acceltune search` and checks that every rank saw the same outcomes as the
// study recorded.
void search_under_mpirun(int ranks) {
  TempDir dir;
  const auto r = sh(fmt::format(
      "cd {} && {} mpirun -np {} {} --bind-to none --mca coll_tuned_use_dynamic_rules 1 -x ACCELTUNE_MPI_TRACE={} "
      "{} search --space mpi-allreduce{} --out study",
      dir.path().string(), kMpiEnv, ranks, ranks > 2 ? "--oversubscribe" : "", (dir / "trace").string(), binary(),
      kTiny));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // pml cannot change inside a job: the study keeps it at its default and says so.
  EXPECT_NE(r.output.find("read once per job"), std::string::npos) << r.output;
  const Json study = Json::parse(test::read_file(dir / "study/study.json"));
  EXPECT_EQ(study["workload"]["ranks"], ranks);
  const auto trials = jsonl(dir / "study/trials.jsonl");
  ASSERT_EQ(trials.size(), 4u);
  const auto root = jsonl(dir / "trace.rank0.jsonl");
  ASSERT_FALSE(root.empty());
  for (int k = 1; k < ranks; ++k) {
    const auto other = jsonl(dir / fmt::format("trace.rank{}.jsonl", k));
    EXPECT_EQ(other, root) << "rank " << k << " saw other outcomes than rank 0";
  }
  // Rank 0's view matches what the study stored, trial by trial.
  std::map<int64_t, std::vector<std::string>> seen;
  for (const auto& e : root) seen[e["trial"].get<int64_t>()].push_back(e["state"].get<std::string>());
  for (const auto& t : trials) {
    const int64_t n = t["number"].get<int64_t>();
    ASSERT_TRUE(seen.count(n)) << "trial " << n << " was not measured by the ranks";
    std::vector<std::string> states;
    for (const auto& m : t["measurements"]) states.push_back(m["state"].get<std::string>());
    EXPECT_EQ(seen[n], states) << "trial " << n;
    EXPECT_EQ(t["config"]["pml"], "ob1");
  }
}

TEST(MpiColl, SearchInsideMpirunTwoRanksAgree) {
  REQUIRE_MPIRUN();
  search_under_mpirun(2);
}

TEST(MpiColl, SearchInsideMpirunFourRanksAgree) {
  REQUIRE_MPIRUN();
  search_under_mpirun(4);
}

// One non-root rank's result is wrong (a broken transport on one node): every rank records the
// measurement failed, not only the rank that saw it, and the study stores every trial failed.
TEST(MpiColl, SearchInsideMpirunOneWrongRankFailsEveryRank) {
  REQUIRE_MPIRUN();
  TempDir dir;
  const auto r = sh(fmt::format(
      "cd {} && {} mpirun -np 2 --bind-to none --mca coll_tuned_use_dynamic_rules 1 -x ACCELTUNE_MPI_TRACE={} "
      "-x ACCELTUNE_MPI_WRONG_RANK=1 {} search --space mpi-allreduce --budget 2 --max-seconds 0.05 --certify-top 0 "
      "--sizes 4K --out study",
      dir.path().string(), kMpiEnv, (dir / "trace").string(), binary()));
  const auto trials = jsonl(dir / "study/trials.jsonl");
  ASSERT_EQ(trials.size(), 2u) << r.output;
  for (const auto& t : trials) {
    EXPECT_NE(t["state"], "ok") << t.dump();
    ASSERT_FALSE(t["measurements"].empty()) << t.dump();
    EXPECT_EQ(t["measurements"][0]["state"], "invalid") << t.dump();
    EXPECT_NE(t["measurements"][0]["error"].get<std::string>().find("rank 1:"), std::string::npos) << t.dump();
  }
  const auto root = jsonl(dir / "trace.rank0.jsonl");
  const auto wrong = jsonl(dir / "trace.rank1.jsonl");
  ASSERT_EQ(root.size(), 2u) << r.output;
  ASSERT_EQ(wrong.size(), 2u) << r.output;
  for (size_t i = 0; i < root.size(); ++i) {
    EXPECT_EQ(root[i]["local"], "ok") << root[i].dump();
    EXPECT_EQ(wrong[i]["local"], "invalid") << wrong[i].dump();
    EXPECT_EQ(root[i]["state"], "invalid") << root[i].dump();
    EXPECT_EQ(wrong[i]["state"], "invalid") << wrong[i].dump();
  }
}

TEST(MpiColl, ForcedAlgorithmChangesTimeInsideOneJob) {
  REQUIRE_MPIRUN();
  // Both configs run in the same job: only MPI_T and a fresh communicator can tell them apart.
  TempDir dir;
  test::write_file(dir / "space.json", R"({
    "name": "mpi-seg", "kernel": "mpi-coll", "operation": "allreduce", "sizes": ["1M"],
    "params": [
      {"name": "algorithm", "kind": "categorical", "values": ["ring", "segmented_ring"], "default": "ring",
       "env": "OMPI_MCA_coll_tuned_allreduce_algorithm"},
      {"name": "segsize", "kind": "ordinal", "values": [64], "default": 64,
       "env": "OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize"}]})");
  // Ranks that yield while they wait keep the comparison stable on a busy host.
  const auto r = sh(fmt::format("cd {} && {} mpirun -np 2 --bind-to none --mca mpi_yield_when_idle 1 --mca "
                                "coll_tuned_use_dynamic_rules 1 {} search --space space.json --budget 2 "
                                "--max-seconds 0.2 --certify-top 0 --out study",
                                dir.path().string(), kMpiEnv, binary()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, double> value;
  for (const auto& t : jsonl(dir / "study/trials.jsonl")) {
    value[t["config"]["algorithm"].get<std::string>()] = t["measurements"][0]["value"].get<double>();
  }
  ASSERT_EQ(value.size(), 2u);
  // 64-byte segments cost a message each: many times slower than the plain ring at 1 MiB, with or without
  // single-copy shared memory.
  EXPECT_GT(value["ring"], 2.0 * value["segmented_ring"]) << r.output;
}

TEST(MpiColl, RulesFileChangesTheAlgorithm) {
  REQUIRE_MPIRUN();
  TempDir dir;
  // Two exported tables for every size: the plain ring, and the segmented ring with 64-byte segments.
  auto rules = [&](const std::string& algorithm, int64_t segsize, const std::string& file) {
    BestTable b;
    b.space = "mpi-allreduce";
    b.kernel = "mpi-coll";
    b.trials = b.trials_ok = 1;
    b.env = {{"algorithm", "OMPI_MCA_coll_tuned_allreduce_algorithm"},
             {"segsize", "OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize"}};
    b.ranges = {SizeRange{0, UINT64_MAX, {}, Json{{"algorithm", algorithm}, {"segsize", segsize}}, false}};
    auto text = emit("ompi-rules", b);
    EXPECT_TRUE(text) << text.error().message;
    if (text) test::write_file(dir / file, *text);
    return text ? *text : std::string();
  };
  EXPECT_NE(rules("segmented_ring", 64, "segmented.txt").find("\n0 5 0 64"), std::string::npos);
  EXPECT_NE(rules("ring", 0, "ring.txt").find("\n0 4 0 0"), std::string::npos);
  test::write_file(dir / "space.json", R"({"name": "plain", "kernel": "mpi-coll", "operation": "allreduce",
    "sizes": ["1M"], "params": [{"name": "pml", "kind": "categorical", "values": ["ob1"], "default": "ob1",
    "env": "OMPI_MCA_pml"}]})");
  auto bench = [&](const std::string& file) {
    const auto r = sh(fmt::format("cd {} && {} OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                                  "OMPI_MCA_coll_tuned_dynamic_rules_filename={} {} bench --space space.json "
                                  "--max-seconds 0.3 --json",
                                  dir.path().string(), kMpiEnv, (dir / file).string(), binary()));
    const auto start = r.output.find('{');
    const Json j = start == std::string::npos ? Json() : Json::parse(r.output.substr(start), nullptr, false);
    const Json ms = j.is_object() ? j.value("measurements", Json::array()) : Json::array();
    const Json m = ms.is_array() && !ms.empty() && ms[0].is_object() ? ms[0] : Json::object();
    // 64-byte segments can be slow enough on a loaded machine to outlast the trial's timeout:
    // the slowest outcome there is, counted as no bandwidth (any other failure fails the test).
    if (file == "segmented.txt" && m.value("state", "") == "timeout") return 0.0;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return m.contains("value") && m["value"].is_number() ? m["value"].get<double>() : 0.0;
  };
  // Interleaved, medians of three: the machine's speed drifts, so one of each proves little.
  std::vector<double> ring_runs, segmented_runs;
  for (int round = 0; round < 3; ++round) {
    ring_runs.push_back(bench("ring.txt"));
    segmented_runs.push_back(bench("segmented.txt"));
  }
  std::sort(ring_runs.begin(), ring_runs.end());
  std::sort(segmented_runs.begin(), segmented_runs.end());
  const double ring = ring_runs[1], segmented = segmented_runs[1];
  std::printf("ring %.3f GB/s, segmented ring %.3f GB/s (medians of three)\n", ring, segmented);
  EXPECT_GT(ring, 3.0 * segmented) << "ring " << ring << " GB/s, segmented ring " << segmented << " GB/s (medians)";
}

TEST(MpiColl, RankDyingFailsTheTrialWithoutHang) {
  REQUIRE_MPIRUN();
  TempDir dir;
  const auto r = sh(fmt::format("cd {} && {} ACCELTUNE_MPI_EXIT_RANK=1 {} search --space mpi-allreduce --budget 1 "
                                "--sizes 4K --max-seconds 0.05 --certify-top 0 --out study",
                                dir.path().string(), kMpiEnv, binary()));
  EXPECT_EQ(r.exit_code, 1) << r.output;  // no trial measured ok
  EXPECT_LT(r.seconds, 30.0);
  const auto trials = jsonl(dir / "study/trials.jsonl");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0]["state"], "failed");
  const std::string error = trials[0]["measurements"][0]["error"].get<std::string>();
  EXPECT_NE(error.find("mpirun exited with status"), std::string::npos) << error;
  EXPECT_NE(error.find("rank 1 exits on request"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  // No rank of that job is left.
  const auto left = sh("grep -l ACCELTUNE_MPI_EXIT_RANK=1 /proc/[0-9]*/environ 2>/dev/null | wc -l");
  EXPECT_EQ(std::stoi(left.output), 0) << "processes of the failed job are still running";
}

// Three namespaces joined by a bridge stand in for a launch host and two compute hosts: mpirun
// runs in the first and starts its daemons in the others through an `ip netns exec` agent, so the
// ranks talk over TCP between two addresses as they would between two machines.
class Namespaces {
 public:
  explicit Namespaces(const std::vector<std::string>& names) : names_(names) {}
  ~Namespaces() {
    for (const auto& n : names_) sh("ip netns del " + n);
  }

 private:
  std::vector<std::string> names_;
};

TEST(MpiColl, RanksOnTwoNamespacesAsTwoHosts) {
  REQUIRE_MPIRUN();
  if (::geteuid() != 0 || !test::have_program("ip")) GTEST_SKIP() << "network namespaces need root and iproute2";
  const std::string tag = fmt::format("at-{}-", ::getpid());
  const std::string m = tag + "m", a = tag + "a", b = tag + "b";
  const auto probe = sh("ip netns add " + m);
  if (probe.exit_code != 0) GTEST_SKIP() << "network namespaces are not permitted here: " << probe.output;
  Namespaces cleanup({m, a, b});
  std::string setup = fmt::format("ip netns add {a} && ip netns add {b} && ip -n {m} link set lo up && "
                                  "ip -n {m} link add br0 type bridge && ip -n {m} addr add 198.18.3.1/24 dev br0 && "
                                  "ip -n {m} link set br0 up",
                                  fmt::arg("m", m), fmt::arg("a", a), fmt::arg("b", b));
  int host = 2;
  for (const auto& ns : {a, b}) {
    setup += fmt::format(" && ip -n {m} link add v{h} type veth peer name eth0 netns {ns} && ip -n {m} link set v{h} "
                         "master br0 && ip -n {m} link set v{h} up && ip -n {ns} link set lo up && "
                         "ip -n {ns} addr add 198.18.3.{h}/24 dev eth0 && ip -n {ns} link set eth0 up",
                         fmt::arg("m", m), fmt::arg("ns", ns), fmt::arg("h", host++));
  }
  const auto made = sh(setup);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  TempDir dir;
  test::write_file(dir / "hosts", "198.18.3.2 slots=1\n198.18.3.3 slots=1\n");
  const fs::path agent = test::source_dir() / "tools" / "mpi-netns-agent.sh";
  // mpirun has been seen waiting for its daemons for good once in many runs: the command has a
  // deadline, and one retry, so a stuck launch fails the test instead of hanging the suite.
  const auto run = [&] {
    std::error_code ec;
    fs::remove_all(dir / "study", ec);
    return sh(fmt::format(
      "cd {dir} && timeout -k 5 60 ip netns exec {m} env {env} ACCELTUNE_NETNS_HOSTS='198.18.3.2={a} 198.18.3.3={b}' "
      "mpirun -np 2 --hostfile hosts --mca plm_rsh_agent {agent} --mca plm_rsh_no_tree_spawn 1 "
      "--mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include 198.18.3.0/24 --mca oob_tcp_if_include "
      "198.18.3.0/24 --bind-to none --mca coll_tuned_use_dynamic_rules 1 -x ACCELTUNE_MPI_TRACE={trace} "
      "{bin} search --space mpi-allreduce --budget 2 --max-seconds 0.05 --certify-top 0 --sizes 4K,64K --out study",
      fmt::arg("dir", dir.path().string()), fmt::arg("m", m), fmt::arg("env", kMpiEnv), fmt::arg("a", a),
      fmt::arg("b", b), fmt::arg("agent", agent.string()), fmt::arg("trace", (dir / "trace").string()),
      fmt::arg("bin", binary())));
  };
  auto r = run();
  if (r.exit_code == 124) {
    std::printf("the two-host launch timed out; retrying once\n");
    r = run();
  }
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trials = jsonl(dir / "study/trials.jsonl");
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) EXPECT_EQ(t["state"], "ok") << t.dump();
  const auto root = jsonl(dir / "trace.rank0.jsonl");
  EXPECT_FALSE(root.empty());
  EXPECT_EQ(jsonl(dir / "trace.rank1.jsonl"), root);
}

TEST(MpiColl, MissingLauncherIsOneLine) {
  const auto r = sh(fmt::format("ACCELTUNE_MPIRUN=/nonexistent/mpirun {} bench --space mpi-allreduce --sizes 4K", binary()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("needs '/nonexistent/mpirun'"), std::string::npos) << r.output;
  EXPECT_EQ(test::lines_of(r.output).size(), 1u) << r.output;
}

TEST(MpiColl, OmpiRulesNeedCollTunedParams) {
  BestTable b;
  b.space = "s";
  b.trials = b.trials_ok = 1;
  b.env = {{"pml", "OMPI_MCA_pml"}};
  b.ranges = {SizeRange{0, UINT64_MAX, {}, Json{{"pml", "ucx"}}, false}};
  auto text = emit("ompi-rules", b);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("OMPI_MCA_coll_tuned_"), std::string::npos) << text.error().message;
}

TEST(MpiColl, MpichJsonIsASelectionTree) {
  BestTable b;
  b.space = "mpich-allreduce";
  b.trials = b.trials_ok = 3;
  b.env = {{"algorithm", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"}};
  b.ranges = {SizeRange{0, 2047, {512}, Json{{"algorithm", "recursive_doubling"}}, false},
              SizeRange{2048, UINT64_MAX, {4096}, Json{{"algorithm", "reduce_scatter_allgather"}}, false}};
  auto text = emit("mpich-json", b);
  ASSERT_TRUE(text) << text.error().message;
  const Json j = Json::parse(*text);
  const Json& leafs = j["collective=allreduce"]["comm_type=intra"]["comm_size=any"];
  EXPECT_TRUE(leafs["avg_msg_size<=2047"].contains("algorithm=MPIR_Allreduce_intra_recursive_doubling")) << *text;
  EXPECT_TRUE(leafs["avg_msg_size=any"].contains("algorithm=MPIR_Allreduce_intra_reduce_scatter_allgather")) << *text;
  // MPICH tries branches in file order, so the catch-all must come last.
  EXPECT_LT(text->find("avg_msg_size<=2047"), text->find("avg_msg_size=any"));
  b.ranges[0].config["algorithm"] = "auto";
  auto refused = emit("mpich-json", b);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("automatic choice"), std::string::npos);
}

// A kernel measured inside a test program (not through the command line) launches its ranks on
// the acceltune binary that the test main set (tuner/binary.hpp). Were the ranks this program
// (/proc/self/exe), each would rerun the whole suite and never reach the launcher.
Measurement measure_in_this_process(uint64_t bytes) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  auto space = Space::load_file(test::spaces_dir() / "mpi-allreduce.json");
  if (!space) {
    ADD_FAILURE() << space.error().message;
    return {};
  }
  auto kernel = make_kernel(*space);
  if (!kernel) {
    ADD_FAILURE() << kernel.error().message;
    return {};
  }
  MeasureSettings quick;
  quick.max_seconds = 0.2;
  quick.max_samples = 20;
  return (*kernel)->measure(*space, space->default_config(), bytes, quick, {});
}

TEST(MpiColl, AKernelMeasuredInATestProgramReachesItsRanks) {
  REQUIRE_MPIRUN();
  const auto t0 = std::chrono::steady_clock::now();
  const Measurement m = measure_in_this_process(4096);
  EXPECT_EQ(m.state, State::ok) << m.error;
  EXPECT_GT(m.value, 0.0);
  EXPECT_EQ(m.bytes, 4096u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
}

TEST(MpiColl, WithoutTheBinarySetALaunchIsAFailedMeasurementThatSaysWhy) {
  REQUIRE_MPIRUN();
  const std::string was = *acceltune_binary();
  set_acceltune_binary("");
  const Measurement m = measure_in_this_process(4096);
  set_acceltune_binary(was);
  EXPECT_EQ(m.state, State::failed);
  EXPECT_NE(m.error.find("acceltune binary is not set"), std::string::npos) << m.error;
}

// A search killed with SIGKILL while an MPI trial hangs (mpirun per trial, in a worker): the
// worker, mpirun and both ranks end within seconds, though Open MPI puts each rank in a process
// group of its own. Resuming then finds nothing left and measures.
TEST(MpiColl, AKilledSearchLeavesNoProcessOfAHangingTrial) {
  REQUIRE_MPIRUN();
  TempDir dir;
  const std::string mark = test::fresh_mark();
  fs::create_directories(dir / "tmp");
  const pid_t pid = test::spawn_cli({"search", "--space", "mpi-allreduce", "--budget", "2", "--sizes", "4K",
                                     "--max-seconds", "0.05", "--trial-timeout", "300", "--certify-top", "0", "--out",
                                     "study"},
                                    dir.path(), {mark + "=1", "ACCELTUNE_MPI_HANG_RANK=1", "TMPDIR=" + (dir / "tmp").string()},
                                    dir / "log");
  ASSERT_TRUE(test::wait_for_marked(mark, "__mpi-rank", 60)) << test::read_file(dir / "log");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the collective
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(test::wait_exit(pid, 10), 128 + SIGKILL);
  EXPECT_EQ(test::left_over(mark, 5), "") << "processes of the killed search's trial are still running";
  // The job's FIFOs and Open MPI's session folder were in the search's scratch folder.
  EXPECT_EQ(test::files_left(dir / "tmp", 5), "") << "files of the killed search are still there";
  const auto r = sh(fmt::format("cd {} && {} {} search --space mpi-allreduce --budget 2 --sizes 4K --max-seconds 0.05 "
                                "--certify-top 0 --out study --resume",
                                dir.path().string(), kMpiEnv, binary()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(jsonl(dir / "study/trials.jsonl").size(), 2u);
}

}  // namespace
}  // namespace acceltune
