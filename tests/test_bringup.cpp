// acceltune bringup: which families a node runs, how the time is split, the merged bundle and its
// job wrapper, bad input, Ctrl-C. One whole bring-up of this machine is in test_bringup_node.cpp.
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "results/compare.hpp"
#include "tests/helpers.hpp"
#include "tools/bringup/bundle.hpp"
#include "tools/bringup/families.hpp"
#include "tuner/delivery.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using namespace bringup;

const char* kMpiRoot = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";

NodeFacts plain_node() {
  NodeFacts n;
  n.cores = 8;
  n.observed["mpirun"] = true;
  n.observed["netns"] = true;
  n.gpu_why = "no CUDA GPU: cudaGetDeviceCount: no CUDA-capable device is detected (100)";
  return n;
}

const Family& family(const std::vector<Family>& fs, const std::string& name) {
  for (const auto& f : fs) {
    if (f.name == name) return f;
  }
  static const Family none;
  ADD_FAILURE() << "no family " << name;
  return none;
}

std::vector<std::string> spaces_of(const Family& f) {
  std::vector<std::string> out;
  for (const auto& s : f.studies) out.push_back(s.space);
  return out;
}

TEST(BringupFamilies, ANodeWithoutGpusOrRdmaRunsHostTcpUcxAndMpi) {
  auto fs = pick_families(plain_node(), {}, {});
  ASSERT_TRUE(fs) << fs.error().message;
  EXPECT_EQ(spaces_of(family(*fs, "host")), std::vector<std::string>{"host-copy"});
  const Family& tcp = family(*fs, "tcp");
  ASSERT_EQ(spaces_of(tcp), std::vector<std::string>{"tcp-stream"});
  EXPECT_EQ(tcp.studies[0].args, std::vector<std::string>{"--netns"});
  EXPECT_EQ(spaces_of(family(*fs, "ucx")), (std::vector<std::string>{"ucx-shm", "ucx-tcp"}));
  const Family& mpi = family(*fs, "mpi");
  ASSERT_EQ(spaces_of(mpi), std::vector<std::string>{"mpi-allreduce"});
  EXPECT_EQ(mpi.studies[0].space_override["ranks"], 8);  // the node's core count
  for (const char* f : {"cuda", "nccl"}) {
    EXPECT_TRUE(family(*fs, f).studies.empty());
    EXPECT_NE(family(*fs, f).skipped.find("no GPU: no CUDA GPU"), std::string::npos) << family(*fs, f).skipped;
  }
  EXPECT_NE(family(*fs, "rdma").skipped.find("no RDMA device"), std::string::npos);
  EXPECT_EQ(studies_to_run(*fs).size(), 5u);
  // Every family is listed, run or skipped, in the documented order.
  ASSERT_EQ(fs->size(), family_names().size());
  for (size_t i = 0; i < fs->size(); ++i) EXPECT_EQ((*fs)[i].name, family_names()[i]);
}

TEST(BringupFamilies, GpusAndRdmaDevicesAddTheirStudies) {
  NodeFacts n = plain_node();
  n.gpus = 1;
  n.rdma_devices = 1;
  auto one = pick_families(n, {}, {});
  ASSERT_TRUE(one);
  EXPECT_EQ(spaces_of(family(*one, "cuda")), (std::vector<std::string>{"cuda-copy", "cuda-copy-d2h", "cuda-copy-d2d"}));
  EXPECT_NE(family(*one, "nccl").skipped.find("one GPU"), std::string::npos);
  EXPECT_EQ(spaces_of(family(*one, "rdma")),
            (std::vector<std::string>{"verbs", "verbs-read", "verbs-send", "verbs-write-lat"}));
  n.gpus = 2;
  auto two = pick_families(n, {}, {});
  ASSERT_TRUE(two);
  EXPECT_EQ(family(*two, "cuda").studies.size(), 4u);
  EXPECT_EQ(family(*two, "cuda").studies.back().space, "cuda-copy-peer");
  const auto nccl = spaces_of(family(*two, "nccl"));
  EXPECT_EQ(nccl.size(), 7u);
  EXPECT_EQ(nccl.front(), "nccl-allreduce");
  EXPECT_TRUE(family(*two, "nccl").skipped.empty());
  // Every study names a shipped space.
  for (const auto& s : studies_to_run(*two)) {
    EXPECT_TRUE(fs::exists(test::spaces_dir() / (s.space + ".json"))) << s.space;
  }
}

TEST(BringupFamilies, AMissingLauncherOrNamespacesSaySo) {
  NodeFacts n = plain_node();
  n.observed["mpirun"] = false;
  n.observed["netns"] = false;
  n.observed["netns_why"] = "network namespaces need root (or CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  n.cores = 1;
  auto fs = pick_families(n, {}, {});
  ASSERT_TRUE(fs);
  EXPECT_NE(family(*fs, "mpi").skipped.find("openmpi-bin"), std::string::npos);
  const Family& tcp = family(*fs, "tcp");
  EXPECT_TRUE(tcp.studies.at(0).args.empty());
  EXPECT_NE(tcp.what.find("loopback: network namespaces need root"), std::string::npos) << tcp.what;
  n.observed["mpirun"] = true;
  auto again = pick_families(n, {}, {});
  EXPECT_EQ(family(*again, "mpi").studies.at(0).space_override["ranks"], 2);  // never a one-rank allreduce
}

// A plain `acceltune search` runs a study whose result a job loads, chosen by the families'
// properties: never the memory-path check while such a family runs here, and it says why.
TEST(BringupFamilies, ASearchWithoutASpaceRunsAStudyAJobLoads) {
  const DefaultSearch d = default_search(plain_node());
  const FamilyInfo* f = FamilyRegistry::instance().find(d.study.family);
  ASSERT_NE(f, nullptr) << d.study.family;
  EXPECT_TRUE(f->advice.empty()) << d.why;
  EXPECT_FALSE(f->env_prefixes.empty()) << d.why;
  EXPECT_FALSE(f->one_env_for_all_paths) << d.why;
  EXPECT_NE(DeliveryRegistry::instance().find(f->kernels.at(0)), nullptr) << d.why;
  EXPECT_EQ(d.study.space, "mpi-allreduce") << d.why;  // on this node, the first such family in bring-up order
  EXPECT_EQ(d.study.space_override["ranks"], 8);
  EXPECT_NE(d.why.find("no --space given: searching mpi-allreduce"), std::string::npos) << d.why;
  EXPECT_NE(d.why.find("host: no library reads its params"), std::string::npos) << d.why;
  EXPECT_NE(d.why.find("ucx: one environment governs all its paths"), std::string::npos) << d.why;
  // Without mpirun and GPUs no family qualifies: the first study that runs, saying why.
  NodeFacts bare = plain_node();
  bare.observed["mpirun"] = false;
  const DefaultSearch none = default_search(bare);
  EXPECT_EQ(none.study.space, "host-copy") << none.why;
  EXPECT_NE(none.why.find("no family here has a result a job loads"), std::string::npos) << none.why;
  EXPECT_NE(none.why.find("mpi: mpirun is not on PATH"), std::string::npos) << none.why;
  EXPECT_NE(none.why.find("the memory-path check"), std::string::npos) << none.why;
}

TEST(BringupFamilies, OnlyAndSkipChooseFamiliesAndUnknownNamesAreBadInput) {
  auto fs = pick_families(plain_node(), {"ucx", "mpi"}, {"mpi"});
  ASSERT_TRUE(fs);
  EXPECT_EQ(family(*fs, "host").skipped, "not named by --only");
  EXPECT_TRUE(family(*fs, "ucx").skipped.empty());
  EXPECT_EQ(family(*fs, "mpi").skipped, "named by --skip");
  EXPECT_EQ(studies_to_run(*fs).size(), 2u);
  // A family the node lacks keeps the node's reason, not --only's.
  auto gpu = pick_families(plain_node(), {"cuda"}, {});
  EXPECT_NE(family(*gpu, "cuda").skipped.find("no GPU"), std::string::npos);
  auto bad = pick_families(plain_node(), {"gpu"}, {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::input);
  EXPECT_NE(bad.error().message.find("--only names an unknown family 'gpu' (known: host, tcp, ucx, mpi, cuda, nccl, rdma)"),
            std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(pick_families(plain_node(), {}, {"ucx", "x"}));
}

TEST(BringupTime, SharesFollowTheWeightsAndWhatIsLeftFlowsOn) {
  std::vector<Study> s(3);
  s[0].weight = 1;
  s[1].weight = 2;
  s[2].weight = 3;
  EXPECT_DOUBLE_EQ(share_seconds(s, 120), 20);
  // The first study used 5 s of its 20: the other two share 115.
  const std::vector<Study> rest(s.begin() + 1, s.end());
  EXPECT_DOUBLE_EQ(share_seconds(rest, 115), 46);
  // Never below a study's minimum.
  EXPECT_DOUBLE_EQ(share_seconds(s, 12), 10);
  EXPECT_DOUBLE_EQ(minimum_seconds(s), 30);
  EXPECT_DOUBLE_EQ(share_seconds({}, 50), 0);
}

// A finished study as contribution_of leaves it: the kernel, the space and its plan's variables.
StudyData study_of(const std::string& space, const std::string& kernel) {
  StudyData d;
  d.best.space = space;
  d.best.kernel = kernel;
  return d;
}

Contribution contribution(const StudyData& d, EnvVars vars, EnvVars pinned = {}) {
  Contribution c;
  c.study = &d;
  c.vars = std::move(vars);
  c.pinned = std::move(pinned);
  c.gain = "certified 1.20x [1.10, 1.30] at 1M";
  return c;
}

TEST(BringupBundle, AVariableWantedTwiceIsSettledAmongTheStudiesThatReadIt) {
  const StudyData shm = study_of("ucx-shm", "ucx"), tcp = study_of("ucx-tcp", "ucx"),
                  mpi = study_of("mpi-allreduce", "mpi-coll"), stream = study_of("tcp-stream", "tcp-stream");
  const std::vector<Contribution> cs = {
      contribution(shm, {{"UCX_RNDV_THRESH", "65536"}, {"UCX_TLS", "posix,cma"}}),
      contribution(tcp, {{"UCX_RNDV_THRESH", "inf"}, {"UCX_TCP_TX_SEG_SIZE", "65536"}}, {{"UCX_TLS", "tcp"}}),
      contribution(mpi, {{"OMPI_MCA_pml", "ucx"}, {"OMPI_MCA_pml_ucx_tls", "any"}}),
      contribution(stream, {})};
  const auto c = conflicts(cs);
  ASSERT_EQ(c.size(), 1u);  // UCX_TLS=posix,cma is left out, so it conflicts with nothing
  ASSERT_EQ(c.count("UCX_RNDV_THRESH"), 1u);
  EXPECT_EQ(c.at("UCX_RNDV_THRESH").size(), 2u);
  // Who reads it: both UCX studies, and Open MPI because its plan runs pml=ucx; not TCP streams.
  EXPECT_TRUE(reads(cs[0], "UCX_RNDV_THRESH"));
  EXPECT_TRUE(reads(cs[1], "UCX_RNDV_THRESH"));
  EXPECT_TRUE(reads(cs[2], "UCX_RNDV_THRESH"));
  EXPECT_FALSE(reads(cs[3], "UCX_RNDV_THRESH"));
  const Contribution ob1 = contribution(mpi, {{"OMPI_MCA_pml", "ob1"}});
  EXPECT_FALSE(reads(ob1, "UCX_RNDV_THRESH"));
  EXPECT_TRUE(reads(ob1, "OMPI_MCA_coll_tuned_use_dynamic_rules"));
  const auto v = conflict_variants(cs, c);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].first, "ucx-shm's values");
  EXPECT_EQ(v[0].second, (EnvVars{{"UCX_RNDV_THRESH", "65536"}}));
  EXPECT_EQ(v[1].second, (EnvVars{{"UCX_RNDV_THRESH", "inf"}}));
  EXPECT_TRUE(v[2].second.empty());
  EXPECT_EQ(v[2].first, "the library's own values");
}

TEST(BringupBundle, SharedMemoryOnlyTransportsAreLeftOutOfAJobAcrossNodes) {
  EXPECT_NE(single_node_only("UCX_TLS", "posix,cma"), "");
  EXPECT_NE(single_node_only("UCX_TLS", "shm"), "");
  for (const char* ok : {"tcp", "sm,tcp", "rc,sm", "all", "^tcp", "ud_v"}) EXPECT_EQ(single_node_only("UCX_TLS", ok), "") << ok;
  EXPECT_EQ(single_node_only("UCX_RNDV_THRESH", "shm"), "");
}

Score score(double g, bool slower) { return Score{g, slower}; }

TEST(BringupBundle, TheKeptVariantIsSlowerNowhereAndBestAcrossItsReaders) {
  // Variant 0 gains most for one reader but costs another; variant 1 gains a little for both.
  EXPECT_EQ(choose_variant({{score(1.3, false), score(0.95, true)}, {score(1.1, false), score(1.05, false)},
                            {score(1.0, false), score(1.0, false)}}),
            1u);
  EXPECT_EQ(choose_variant({{score(1.3, false), score(1.2, false)}, {score(1.1, false), score(1.05, false)},
                            {score(1.0, false), score(1.0, false)}}),
            0u);
  // Everything but the library's own values is slower somewhere: keep the library's.
  EXPECT_EQ(choose_variant({{score(2.0, true)}, {score(1.5, true)}, {score(1.0, true)}}), 2u);
  Delivered fast = test::delivered_gain(2.0, 1.5, 2.5), slow = test::delivered_gain(0.5, 0.4, 0.6);
  const Score s = score_of({{4096, fast}, {65536, slow}});
  EXPECT_NEAR(s.geomean, 1.0, 1e-9);
  EXPECT_TRUE(s.slower);
  EXPECT_FALSE(score_of({{4096, fast}}).slower);
}

Bundle sample_bundle() {
  Bundle b;
  EnvLine a;
  a.var = "ACCELTUNE_TEST_A";
  a.value = "it's $HOME";
  a.from = {"ucx-shm"};
  a.why = "from ucx-shm (certified 1.20x [1.10, 1.30] at 1M)";
  EnvLine f;
  f.var = "ACCELTUNE_TEST_RULES";
  f.value = "/elsewhere/ompi-rules.conf";
  f.is_file = true;
  f.why = "from mpi-allreduce";
  EnvLine u;
  u.var = "UCX_TLS";
  u.value = "posix,cma";
  u.left_out = true;
  u.why = "UCX_TLS=posix,cma names no network transport";
  EnvLine r;
  r.var = "UCX_RNDV_THRESH";
  r.value = "65536";
  r.why = "from ucx-shm; the value that measured best across ucx-shm, ucx-tcp";
  b.env = {a, f, u, r};
  b.notes = {"UCX_RNDV_THRESH: ucx-shm wanted 65536, ucx-tcp wanted inf; kept 65536"};
  return b;
}

TEST(BringupBundle, ADeliveredFigureNamesItsWorstSizeBesideItsBest) {
  Delivered slow, fast;
  slow.ratio = 0.69, slow.ci_low = 0.47, slow.ci_high = 1.03;
  fast.ratio = 1.11, fast.ci_low = 0.32, fast.ci_high = 3.81;
  const std::string text = delivered_range_text({{65536, slow}, {1 << 20, fast}, {4 << 20, fast}});
  EXPECT_EQ(text.find("1.11x"), 0u) << text;
  EXPECT_NE(text.find("at 1M, worst 0.69x [0.47, 1.03] at 64K"), std::string::npos) << text;
  EXPECT_EQ(text.find("slower"), std::string::npos) << text;  // its interval reaches 1.0
  slow.slower = true;
  EXPECT_NE(delivered_range_text({{65536, slow}, {1 << 20, fast}}).find("; slower at 64K"), std::string::npos);
  // One size: nothing to set beside it.
  EXPECT_EQ(delivered_range_text({{1 << 20, fast}}).find("worst"), std::string::npos);
}

TEST(BringupBundle, TheEnvFilesSayWhereEachLineComesFrom) {
  const Bundle b = sample_bundle();
  const std::string env = env_file_text(b, "# header\n");
  EXPECT_EQ(env.rfind("# header\n", 0), 0u);
  EXPECT_NE(env.find("# from ucx-shm (certified 1.20x [1.10, 1.30] at 1M)\nACCELTUNE_TEST_A=it's $HOME\n"),
            std::string::npos)
      << env;
  EXPECT_NE(env.find("\n# UCX_TLS=posix,cma\n"), std::string::npos) << env;  // left out: commented
  // Its paths hold where it was written; a moved bundle loads through job.sh, exec or the loader.
  EXPECT_NE(env.find("# Paths in it are absolute"), std::string::npos) << env;
  EXPECT_NE(env.find("loads through its job.sh, `acceltune exec --config BUNDLE`"), std::string::npos) << env;
  EXPECT_NE(env.find("# note: UCX_RNDV_THRESH: ucx-shm wanted 65536"), std::string::npos) << env;
  const std::string ucx = env_subset_text(b, "# header\n", *find_bundle_file("ucx.env"));
  EXPECT_NE(ucx.find("UCX_RNDV_THRESH=65536"), std::string::npos);
  EXPECT_EQ(ucx.find("ACCELTUNE_TEST_A"), std::string::npos);
  EXPECT_NE(env_subset_text(Bundle{}, "", *find_bundle_file("ucx.env")).find("no UCX variable"), std::string::npos);
}

TEST(BringupBundle, JobShSetsTheVariablesWhereverTheBundleMoves) {
  test::TempDir t;
  fs::create_directories(t / "b");
  test::write_file(t / "b" / "job.sh", job_script_text(sample_bundle()));
  const std::string show = " sh -c 'printf \"%s|%s|%s|%s\" \"$ACCELTUNE_TEST_A\" \"$ACCELTUNE_TEST_RULES\" "
                           "\"${UCX_TLS-unset}\" \"$UCX_RNDV_THRESH\"'";
  auto r = test::run_shell("env -u UCX_TLS sh " + (t / "b" / "job.sh").string() + show);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "it's $HOME|" + (t / "b" / "ompi-rules.conf").string() + "|unset|65536");
  fs::rename(t / "b", t / "moved");
  r = test::run_shell("env -u UCX_TLS sh " + (t / "moved" / "job.sh").string() + show);
  EXPECT_EQ(r.out, "it's $HOME|" + (t / "moved" / "ompi-rules.conf").string() + "|unset|65536");
  auto usage = test::run_shell("sh " + (t / "moved" / "job.sh").string());
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("usage:"), std::string::npos);
}

TEST(BringupBundle, JobShForwardsEveryVariableToOpenMpiRanks) {
  test::TempDir t;
  test::write_file(t / "job.sh", job_script_text(sample_bundle()));
  // What an Open MPI launcher is given: a stand-in that says it is Open MPI and prints its argv.
  fs::create_directories(t / "bin");
  test::write_file(t / "bin" / "mpirun",
                   "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'mpirun (Open MPI) 4.1.4'; exit 0; }\necho \"$@\"\n");
  fs::permissions(t / "bin" / "mpirun", fs::perms::owner_all);
  auto r = test::run_shell("sh " + (t / "job.sh").string() + " " + (t / "bin" / "mpirun").string() + " -np 2 ./app");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* v : {"-x ACCELTUNE_TEST_A", "-x ACCELTUNE_TEST_RULES", "-x UCX_RNDV_THRESH"}) {
    EXPECT_NE(r.out.find(v), std::string::npos) << r.out;
  }
  EXPECT_EQ(r.out.find("-x UCX_TLS"), std::string::npos) << r.out;  // left out
  EXPECT_NE(r.out.find("-np 2 ./app"), std::string::npos) << r.out;
  // The real launcher: every rank of a plain program sees the bundle's variables.
  if (!test::have_program("mpirun")) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  r = test::run_shell(std::string(kMpiRoot) + " sh " + (t / "job.sh").string() +
                      " mpirun -np 2 --oversubscribe sh -c 'echo \"rank $OMPI_COMM_WORLD_RANK: $UCX_RNDV_THRESH\"'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 0: 65536"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1: 65536"), std::string::npos) << r.out;
}

TEST(BringupCli, BadTimeLimitsFamiliesAndFoldersAreBadInput) {
  test::TempDir t;
  auto r = test::run_cli({"bringup", "--time-limit", "soon", "--out", "b"}, t.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--time-limit 'soon' is not a duration"), std::string::npos) << r.err;
  r = test::run_cli({"bringup", "--time-limit", "5s", "--only", "host,ucx", "--out", "b"}, t.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("too short"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at least 35s"), std::string::npos) << r.err;  // three studies, 10 s each, in 85% of the limit
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = test::run_cli({"bringup", "--only", "gpu", "--out", "b"}, t.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown family 'gpu'"), std::string::npos) << r.err;
  test::write_file(t / "full", "");
  fs::create_directories(t / "taken");
  test::write_file(t / "taken" / "x", "");
  r = test::run_cli({"bringup", "--time-limit", "1m", "--only", "host", "--out", "taken"}, t.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already holds files"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(t / "b"));
  auto help = test::run_cli({"bringup", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* w : {"--time-limit", "--only", "--skip", "job.sh", "acceltune.env", "partial"}) {
    EXPECT_NE(help.out.find(w), std::string::npos) << w;
  }
}

// Ctrl-C during the second study: the first is kept, the bundle is written from it and marked
// partial, and nothing the bring-up started is left.
TEST(BringupCli, CtrlCKeepsTheFinishedStudiesAndWritesAPartialBundle) {
  test::TempDir t;
  const std::string mark = test::fresh_mark();
  const pid_t pid = test::spawn_cli({"bringup", "--time-limit", "40s", "--only", "host,ucx", "--out", "b",
                                     "--verify-rounds", "2", "--certify-rounds", "2"},
                                    t.path(), {mark + "=1"}, t / "out.txt");
  // Wait for the ucx-shm study to record a trial.
  const auto t0 = std::chrono::steady_clock::now();
  while (test::read_file(t / "b" / "studies" / "ucx-shm" / "trials.jsonl").empty() &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(test::read_file(t / "b" / "studies" / "ucx-shm" / "trials.jsonl").empty()) << test::read_file(t / "out.txt");
  ::kill(pid, SIGINT);
  const int rc = test::wait_exit(pid, 120);
  EXPECT_EQ(rc, 130) << test::read_file(t / "out.txt");
  const Json summary = Json::parse(test::read_file(t / "b" / "bringup.json"));
  EXPECT_TRUE(summary["partial"].get<bool>());
  EXPECT_EQ(summary["cancelled_by"], "SIGINT");
  std::map<std::string, std::string> state;
  for (const auto& f : summary["families"]) {
    for (const auto& s : f["studies"]) state[s["space"]] = s["state"];
  }
  EXPECT_EQ(state["host-copy"], "done");
  EXPECT_EQ(state["ucx-shm"], "cancelled");
  EXPECT_EQ(state["ucx-tcp"], "not started");
  EXPECT_TRUE(fs::exists(t / "b" / "studies" / "host-copy" / "best.json"));
  EXPECT_NE(test::read_file(t / "b" / "acceltune.env").find("# PARTIAL"), std::string::npos);
  for (const char* f : {"ucx.env", "job.sh", "ompi-rules.conf", "nccl-tuner.conf", "tcp-settings.sh", "report.html"}) {
    EXPECT_TRUE(fs::exists(t / "b" / f)) << f;
  }
  EXPECT_EQ(test::left_over(mark, 20), "");
}

}  // namespace
}  // namespace acceltune
