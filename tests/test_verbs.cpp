// verbs on a real RDMA device (a NIC, or soft-RoCE: `rdma link add rxe0 type rxe netdev lo`):
// write, read and send move correct data over RC queue pairs; latency runs one message at a
// time; a path MTU above the port's is a failed measurement, not a crash. Skips without one.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

std::filesystem::path spaces_dir() { return test::spaces_dir(); }

MeasureSettings quick() {
  MeasureSettings s;
  s.warmup_seconds = 0.005;
  s.max_seconds = 0.1;
  s.max_samples = 30;
  return s;
}

struct Attached {
  Space space;
  std::unique_ptr<Kernel> kernel;
};

std::optional<Attached> attach(const std::string& name, std::string& skip) {
  auto s = Space::load_file(spaces_dir() / (name + ".json"));
  if (!s) {
    ADD_FAILURE() << s.error().message;
    return std::nullopt;
  }
  auto k = make_kernel(*s);
  if (!k) {
    const std::string& msg = k.error().message;
    if (msg.find("unknown kernel") != std::string::npos || msg.find("none found") != std::string::npos) skip = msg;
    else ADD_FAILURE() << msg;
    return std::nullopt;
  }
  return Attached{std::move(*s), std::move(*k)};
}

Config with(const Space& s, std::initializer_list<std::pair<const char*, const char*>> sets) {
  Config c = s.default_config();
  for (const auto& [k, v] : sets) EXPECT_TRUE(s.set_value(c, k, v).ok()) << k << "=" << v;
  return c;
}

TEST(Verbs, WriteReadAndSendMoveCorrectData) {
  for (const char* name : {"verbs", "verbs-read", "verbs-send"}) {
    SCOPED_TRACE(name);
    std::string skip;
    auto a = attach(name, skip);
    if (!a) {
      if (!skip.empty()) GTEST_SKIP() << skip;
      return;
    }
    for (uint64_t bytes : {uint64_t{64}, uint64_t{65536}}) {
      const Config c = with(a->space, {{"qps", "2"}, {"outstanding", "8"}, {"signal_every", "4"}});
      const Measurement m = a->kernel->measure(a->space, c, bytes, quick(), {});
      EXPECT_EQ(m.state, State::ok) << bytes << ": " << m.error;
      EXPECT_GT(m.value, 0.0);
    }
  }
}

TEST(Verbs, InlineSmallWritesAndLatency) {
  std::string skip;
  auto a = attach("verbs-write-lat", skip);
  if (!a) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    return;
  }
  const Measurement m = a->kernel->measure(a->space, with(a->space, {{"inline_bytes", "64"}}), 64, quick(), {});
  ASSERT_EQ(m.state, State::ok) << m.error;
  EXPECT_TRUE(m.details.at("inline").get<bool>());
  EXPECT_GT(m.details.at("latency_us").get<double>(), 0.0);
}

TEST(Verbs, PathMtuAboveThePortsIsAFailedMeasurement) {
  std::string skip;
  auto a = attach("verbs", skip);
  if (!a) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    return;
  }
  // Soft-RoCE on loopback and most Ethernet ports run below 4096; where 4096 is active this passes too.
  const Measurement m = a->kernel->measure(a->space, with(a->space, {{"mtu", "4096"}}), 4096, quick(), {});
  if (m.state != State::ok) {
    EXPECT_NE(m.error.find("MTU"), std::string::npos) << m.error;
  }
}

}  // namespace
}  // namespace acceltune
