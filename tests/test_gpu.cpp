// cuda-copy and nccl on a real GPU: every operation and engine copies correctly and reports a
// bandwidth; every collective passes its check with busbw as nccl-tests defines it; failures
// and timeouts come back as data. Skips where the build or the machine has no GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "kernels/nccl/nccl_common.hpp"
#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {


MeasureSettings quick() { return test::quick_settings(0.005, 0.1, 5, 30); }

using test::Attached;

// The space attached to its kernel, or the reason to skip.
std::optional<Attached> attach(const std::string& name, std::string& skip, const std::function<void(Space&)>& edit = {}) {
  return test::attach_shipped(name, skip, {"unknown kernel", "none found", "needs 2", "GPUs; found", "this node has"},
                              edit);
}

Config with(const Space& s, const std::vector<std::pair<std::string, std::string>>& sets) {
  return test::config_with(s, sets, true);
}

TEST(CudaCopy, EveryEngineAndMemoryKindCopiesCorrectly) {
  for (const char* name : {"cuda-copy", "cuda-copy-d2h"}) {
    ATTACH_OR_SKIP(a, name, skip_a);
    for (const char* mem : {"pageable", "pinned", "registered"}) {
      for (const char* engine : {"copy", "sm"}) {
        if (std::string(engine) == "sm" && std::string(mem) == "pageable") continue;
        SCOPED_TRACE(fmt::format("{} {} {}", name, mem, engine));
        const Config c = with(a->space, {{"host_memory", mem}, {"engine", engine}, {"chunk", "1048576"}, {"streams", "2"}});
        const Measurement m = a->kernel->measure(a->space, c, 4 << 20, quick(), {});
        EXPECT_EQ(m.state, State::ok) << m.error;
        EXPECT_GT(m.value, 0.1);
        EXPECT_LT(m.value, 5000.0);  // GB/s: above any bus there is
      }
    }
  }
}

TEST(CudaCopy, MisalignedBuffersStillCopyCorrectly) {
  ATTACH_OR_SKIP(a, "cuda-copy-d2d", skip_a);
  for (const char* engine : {"copy", "sm"}) {
    for (const auto& [so, dof] : {std::pair{"4", "64"}, std::pair{"64", "4"}, std::pair{"4", "4"}}) {
      SCOPED_TRACE(fmt::format("{} src {} dst {}", engine, so, dof));
      const Config c = with(a->space, {{"engine", engine}, {"src_offset", so}, {"dst_offset", dof}});
      // An odd size, so the SM copy has head and tail bytes too.
      const Measurement m = a->kernel->measure(a->space, c, (1 << 20) + 13, quick(), {});
      EXPECT_EQ(m.state, State::ok) << m.error;
      if (std::string(engine) == "sm") {
        ASSERT_TRUE(m.details.contains("vector_bytes"));
        EXPECT_EQ(m.details["vector_bytes"].get<int>(), std::string(so) == std::string(dof) ? 16 : 4);
      }
    }
  }
}

TEST(CudaCopy, PinnedBeatsPageableForLargeHostToDeviceCopies) {
  ATTACH_OR_SKIP(a, "cuda-copy", skip_a);
  const Measurement pageable = a->kernel->measure(a->space, with(a->space, {{"host_memory", "pageable"}}), 64 << 20, quick(), {});
  const Measurement pinned = a->kernel->measure(a->space, with(a->space, {{"host_memory", "pinned"}}), 64 << 20, quick(), {});
  ASSERT_EQ(pageable.state, State::ok) << pageable.error;
  ASSERT_EQ(pinned.state, State::ok) << pinned.error;
  EXPECT_GT(pinned.value, pageable.value) << "pinned " << pinned.value << " GB/s, pageable " << pageable.value;
}

TEST(CudaCopy, PeerCopiesBetweenTwoGpus) {
  ATTACH_OR_SKIP(a, "cuda-copy-peer", skip_a);
  for (const char* engine : {"copy", "sm"}) {
    const Measurement m = a->kernel->measure(a->space, with(a->space, {{"engine", engine}}), 16 << 20, quick(), {});
    // Without peer access the SM copy fails as data; the copy engine always works.
    if (std::string(engine) == "sm" && m.state == State::failed) {
      EXPECT_NE(m.error.find("peer access"), std::string::npos) << m.error;
      continue;
    }
    EXPECT_EQ(m.state, State::ok) << m.error;
  }
}

TEST(Nccl, EveryCollectivePassesItsCheckWithNcclTestsBusbw) {
  for (const char* name : {"nccl-allreduce", "nccl-allgather", "nccl-reduce-scatter", "nccl-broadcast", "nccl-reduce",
                           "nccl-alltoall", "nccl-sendrecv"}) {
    SCOPED_TRACE(name);
    ATTACH_OR_SKIP(a, name, skip_a);
    for (uint64_t bytes : {uint64_t{4096}, uint64_t{1} << 22}) {
      const Measurement m = a->kernel->measure(a->space, a->space.default_config(), bytes, quick(), {});
      ASSERT_EQ(m.state, State::ok) << m.error;
      const int ranks = m.details.at("ranks").get<int>();
      const double factor = nccl_busbw_factor(*nccl_op_from_string(a->space.operation()), ranks);
      EXPECT_DOUBLE_EQ(m.details.at("busbw_factor").get<double>(), factor);
      EXPECT_NEAR(m.details.at("busbw_gbps").get<double>(), m.details.at("algbw_gbps").get<double>() * factor, 1e-9);
      EXPECT_DOUBLE_EQ(m.value, factor > 0 ? m.details.at("busbw_gbps").get<double>() : m.details.at("algbw_gbps").get<double>());
      // The mean of the ranks' times, as nccl-tests; the slowest rank's figure beside it is never faster.
      EXPECT_EQ(m.details.value("rank_time", ""), "mean");
      EXPECT_NE(m.details.value("value_is", "").find("mean of the ranks' times"), std::string::npos);
      EXPECT_LE(m.details.at("algbw_slowest_rank_gbps").get<double>(), m.details.at("algbw_gbps").get<double>() * 1.000001);
      EXPECT_GT(m.value, 0.0);
    }
  }
}

TEST(Nccl, CommunicatorFieldsReachTheRanks) {
  ATTACH_OR_SKIP(a, "nccl-allreduce", skip_a);
  for (const char* ch : {"1", "4"}) {
    const Measurement m = a->kernel->measure(a->space, with(a->space, {{"channels", ch}}), 1 << 20, quick(), {});
    EXPECT_EQ(m.state, State::ok) << "channels " << ch << ": " << m.error;
    // The rank passed the pair of CTA bounds to ncclCommInitRankConfig.
    ASSERT_TRUE(m.details.contains("nccl_config")) << m.details.dump();
    EXPECT_EQ(m.details["nccl_config"].value("minCTAs", -1), std::atoi(ch)) << m.details.dump();
    EXPECT_EQ(m.details["nccl_config"].value("maxCTAs", -1), std::atoi(ch)) << m.details.dump();
  }
}

TEST(Nccl, AnInitialisationThatCannotFinishIsATimedOutMeasurement) {
  ATTACH_OR_SKIP(a, "nccl-allreduce", skip_a, [](Space& s) { s.set_extra("init_timeout_seconds", 0.001); });
  const auto t0 = std::chrono::steady_clock::now();
  const Measurement m = a->kernel->measure(a->space, a->space.default_config(), 1 << 20, quick(), {});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(m.state, State::timeout) << to_string(m.state) << ": " << m.error;
  EXPECT_NE(m.error.find("within"), std::string::npos) << m.error;
  EXPECT_LT(took, 10.0);
}

TEST(Nccl, MoreRanksThanGpusIsRefused) {
  std::string skip;
  auto a = attach("nccl-allreduce", skip, [](Space& s) { s.set_extra("ranks", 4096); });
  if (!skip.empty() && skip.find("this node has") == std::string::npos) GTEST_SKIP() << skip;
  EXPECT_FALSE(a.has_value());
  EXPECT_NE(skip.find("one rank per GPU"), std::string::npos) << skip;
}

// With several GPUs a search runs through its workers; with one, a one-rank communicator, it
// has nothing to tune and says so (exit 2) instead of searching noise.
TEST(Nccl, SearchThroughWorkersWithEnvParams) {
  ATTACH_OR_SKIP(a, "nccl-allreduce", skip_a);
  const bool one_rank = !a->kernel->nothing_to_tune(a->space).empty();
  test::TempDir dir;
  auto r = test::run_cli({"search", "--space", "nccl-allreduce", "--strategy", "random", "--budget", "4", "--sizes",
                          "1M", "--seed", "3", "--out", (dir / "study").string()});
  if (one_rank) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("nothing to tune with one rank"), std::string::npos) << r.err;
    return;
  }
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "study" / "best.json")) << r.out << r.err;
  // Four trials, each measured ok by its own worker with its own NCCL_ variables.
  const auto lines = test::lines_of(test::read_file(dir / "study" / "trials.jsonl"));
  ASSERT_EQ(lines.size(), 4u) << r.err;
  for (const auto& line : lines) {
    const Json t = Json::parse(line);
    EXPECT_EQ(t.value("state", ""), "ok") << line;
    ASSERT_FALSE(t["measurements"].empty()) << line;
    EXPECT_GT(t["measurements"][0].value("value", 0.0), 0.0) << line;
  }
}

}  // namespace
}  // namespace acceltune
