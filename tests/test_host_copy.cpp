#include <gtest/gtest.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>

#include "kernels/shared/team.hpp"
#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

// Chunked by default (1 MiB, where host-copy's table says one piece), so read as a stored
// definition: the kernel's tests, not the table's.
Space copy_space(const std::string& extra_params = "") {
  return test::space_from_definition(R"({"name": "hc", "kernel": "host-copy", "sizes": ["64K"], "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1},
    {"name": "chunk", "kind": "pow2", "min": 4096, "max": 1048576, "default": 1048576},
    {"name": "method", "kind": "categorical", "values": ["memcpy", "stream", "rep_movsb"], "default": "memcpy"},
    {"name": "src_offset", "kind": "ordinal", "values": [0, 1, 64], "default": 0},
    {"name": "dst_offset", "kind": "ordinal", "values": [0, 1, 2048], "default": 0},
    {"name": "touch", "kind": "categorical", "values": ["main", "workers"], "default": "main"},
    {"name": "hugepages", "kind": "bool", "default": false})" + extra_params + "]}");
}

MeasureSettings quick() { return test::quick_settings(0.001, 0.02, 3); }

TEST(HostCopy, EveryMethodCopiesCorrectlyAtOddSizesAndOffsets) {
  Space s = copy_space();
  auto k = std::move(make_kernel(s).value());
  for (const char* method : {"memcpy", "stream", "rep_movsb"}) {
    for (const char* threads : {"1", "2"}) {
      for (const char* touch : {"main", "workers"}) {
        Config c = s.default_config();
        ASSERT_TRUE(s.set_value(c, "method", method).ok());
        ASSERT_TRUE(s.set_value(c, "threads", threads).ok());
        ASSERT_TRUE(s.set_value(c, "touch", touch).ok());
        ASSERT_TRUE(s.set_value(c, "src_offset", "1").ok());
        ASSERT_TRUE(s.set_value(c, "dst_offset", "2048").ok());
        ASSERT_TRUE(s.set_value(c, "chunk", "4096").ok());
        // Sizes that are not multiples of the vector width, the chunk or the thread share.
        for (uint64_t bytes : {uint64_t{1}, uint64_t{63}, uint64_t{4097}, uint64_t{100003}}) {
          Measurement m = k->measure(s, c, bytes, quick(), {});
          EXPECT_EQ(m.state, State::ok) << s.key(c) << " bytes " << bytes << ": " << m.error;
          EXPECT_GT(m.value, 0);
          EXPECT_GE(m.samples_seconds.size(), 2u);
        }
      }
    }
  }
}

TEST(HostCopy, HugePagesAndDefaultsMeasure) {
  Space s = copy_space();
  auto k = std::move(make_kernel(s).value());
  Config c = s.default_config();
  ASSERT_TRUE(s.set_value(c, "hugepages", "true").ok());
  Measurement m = k->measure(s, c, 4 << 20, quick(), {});
  EXPECT_EQ(m.state, State::ok) << m.error;
  EXPECT_GT(m.value, 0.1);  // any machine copies faster than 100 MB/s
}

// A space that lists threads and no chunk: each thread copies its share whole. (The omitted
// chunk used to be the largest size_t, and the second thread's offset wrapped around: it copied
// its share again and again, one byte further back each time.)
// Two threads by default (host-copy's table says one), so read as a stored definition.
TEST(HostCopy, ASpaceWithoutAChunkCopiesEachShareOnce) {
  Space s = test::space_from_definition(R"({"name": "hc", "kernel": "host-copy", "sizes": ["64K"], "params": [
    {"name": "threads", "kind": "ordinal", "values": [1, 2], "default": 2}]})");
  auto k = std::move(make_kernel(s).value());
  for (uint64_t bytes : {uint64_t{262144}, uint64_t{100003}}) {
    Measurement m = k->measure(s, s.default_config(), bytes, quick(), {});
    EXPECT_EQ(m.state, State::ok) << m.error;
    // Far below any copy on a loaded machine, far above the wrapped loop (under 0.002 GB/s).
    EXPECT_GT(m.value, 0.01) << bytes;
  }
}

// make_kernel's check, for spaces that did not come from a file (a file is refused when it is read).
TEST(HostCopy, RejectsUnknownMethodsAndOutOfRangeValues) {
  Space s = test::space_from_definition(R"({"name": "hc", "kernel": "host-copy", "params": [
    {"name": "method", "kind": "categorical", "values": ["memcpy", "dma"], "default": "memcpy"}]})");
  auto k = make_kernel(s);
  ASSERT_FALSE(k.has_value());
  EXPECT_EQ(k.error().exit_code(), 2);
  EXPECT_NE(k.error().message.find("'dma'"), std::string::npos) << k.error().message;
  Space t = test::space_from_definition(R"({"name": "hc", "kernel": "host-copy", "params": [
    {"name": "threads", "kind": "int", "min": 0, "max": 2, "default": 1}]})");
  auto kt = make_kernel(t);
  ASSERT_FALSE(kt.has_value());
  EXPECT_NE(kt.error().message.find("threads"), std::string::npos);
}

// The team behind host-copy's and tcp-stream's threads. A member that shares its CPU with the
// caller turns a parallel copy into one thread taking turns: a new thread starts on its creator's
// CPU and a woken one beside its waker, and on a 2-CPU machine they stayed together for thousands
// of runs (a 64 KiB copy on 2 threads at 0.1 GB/s, one in three trials).
TEST(Team, MembersRunOnAnotherCpuThanTheCaller) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "this process may use one CPU only";
  int apart = 0;
  const int rounds = 40;
  for (int r = 0; r < rounds; ++r) {
    Team team(2);  // a new team each round: the start
    std::array<int, 2> cpu{-1, -1};
    // A pause first, so the member sleeps and is woken by the caller: the wake-up's placement.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    team.run([&](int id) { cpu[id] = sched_getcpu(); });
    apart += cpu[0] != cpu[1];
  }
  EXPECT_GE(apart, rounds * 8 / 10) << "runs where the member shared the caller's CPU: " << rounds - apart;
}

TEST(Team, ATeamConfinedToOneCpuStillRunsEveryMemberEveryTime) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // the members inherit it
  {
    Team team(3);
    std::array<std::atomic<int>, 3> runs{};
    for (int r = 0; r < 300; ++r) {
      team.run([&](int id) { runs[id].fetch_add(1); });
      if (r % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // members sleep
    }
    for (int id = 0; id < 3; ++id) EXPECT_EQ(runs[id].load(), 300) << "member " << id;
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
}

}  // namespace
}  // namespace acceltune
