// verbs without a device: the rules the kernel applies (read depths, the RoCE GID, the global
// route header, the message size limit, the latency convention, the far end's request) and the
// far end's refusal of a malformed command line. On a real RDMA device (a NIC, or soft-RoCE:
// `rdma link add rxe0 type rxe netdev eth0`): write, read and send move correct data over RC
// queue pairs; the latency ops report perftest's figures; a path MTU above the port's is a
// failed measurement, not a crash, and leaves no far end behind. Those skip without one.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <limits>

#include "kernels/rdma/verbs_rules.hpp"
#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {


MeasureSettings quick() { return test::quick_settings(0.005, 0.1, 0, 30); }

using test::Attached;

std::optional<Attached> attach(const std::string& name, std::string& skip) {
  return test::attach_shipped(name, skip, {"unknown kernel", "none found"});
}

Config with(const Space& s, const std::vector<std::pair<std::string, std::string>>& sets) {
  return test::config_with(s, sets);
}

TEST(Verbs, WriteReadAndSendMoveCorrectData) {
  for (const char* name : {"verbs", "verbs-read", "verbs-send"}) {
    SCOPED_TRACE(name);
    ATTACH_OR_SKIP(a, name, skip_a);
    for (uint64_t bytes : {uint64_t{64}, uint64_t{65536}}) {
      const Config c = with(a->space, {{"qps", "2"}, {"outstanding", "8"}, {"signal_every", "4"}});
      const Measurement m = a->kernel->measure(a->space, c, bytes, quick(), {});
      EXPECT_EQ(m.state, State::ok) << bytes << ": " << m.error;
      EXPECT_GT(m.value, 0.0);
    }
  }
}

TEST(Verbs, InlineSmallWritesAndLatency) {
  ATTACH_OR_SKIP(a, "verbs-write-lat", skip_a);
  const Measurement m = a->kernel->measure(a->space, with(a->space, {{"inline_bytes", "64"}}), 64, quick(), {});
  ASSERT_EQ(m.state, State::ok) << m.error;
  EXPECT_TRUE(m.details.at("inline").get<bool>());
  // A ping-pong, as ib_write_lat: the latency is half the round trip.
  const double latency = m.details.at("latency_us").get<double>();
  EXPECT_GT(latency, 0.0);
  EXPECT_DOUBLE_EQ(m.details.at("round_trip_us").get<double>(), 2 * latency);
  EXPECT_NE(m.details.at("latency_is").get<std::string>().find("ib_write_lat"), std::string::npos);
}

TEST(Verbs, SizeOverThePortsLargestMessageIsInvalid) {
  ATTACH_OR_SKIP(a, "verbs", skip_a);
  const uint64_t bytes = uint64_t{std::numeric_limits<uint32_t>::max()} + 1;
  const Measurement m = a->kernel->measure(a->space, a->space.default_config(), bytes, quick(), {});
  EXPECT_EQ(m.state, State::invalid);
  EXPECT_NE(m.error.find("max_msg_sz"), std::string::npos) << m.error;
}

// The active MTU in bytes of the port the kernel uses (the first device when none is named), or
// 0 when it cannot be read.
int active_mtu_bytes(const std::string& device, int port) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return 0;
  int bytes = 0;
  for (int i = 0; i < n && bytes == 0; ++i) {
    if (!device.empty() && device != ibv_get_device_name(list[i])) continue;
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, static_cast<uint8_t>(port), &pa) == 0) bytes = 128 << static_cast<int>(pa.active_mtu);
      ibv_close_device(ctx);
    }
    if (device.empty()) break;
  }
  ibv_free_device_list(list);
  return bytes;
}

TEST(Verbs, PathMtuAboveThePortsIsAFailedMeasurement) {
  ATTACH_OR_SKIP(a, "verbs", skip_a);
  // The port's active MTU decides: below 4096 (soft-RoCE, most Ethernet ports) the measurement
  // fails naming the MTU; at 4096 it measures.
  const int active = active_mtu_bytes(a->space.extra().value("device", ""), a->space.extra().value("port", 1));
  ASSERT_GT(active, 0) << "the port's active MTU could not be read";
  const Measurement m = a->kernel->measure(a->space, with(a->space, {{"mtu", "4096"}}), 4096, quick(), {});
  if (active < 4096) {
    EXPECT_NE(m.state, State::ok) << "active MTU " << active;
    EXPECT_NE(m.error.find("MTU"), std::string::npos) << m.error;
  } else {
    EXPECT_EQ(m.state, State::ok) << m.error;
    EXPECT_GT(m.value, 0);
  }
  // The far end is ended and reaped, failed or not.
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

using verbs::GidEntry;
using verbs::GidType;

GidEntry gid(int index, GidType type, std::initializer_list<uint8_t> head, std::initializer_list<uint8_t> tail = {}) {
  GidEntry e;
  e.index = index;
  e.type = type;
  size_t i = 0;
  for (uint8_t b : head) e.raw[i++] = b;
  i = 16 - tail.size();
  for (uint8_t b : tail) e.raw[i++] = b;
  return e;
}
GidEntry link_local(int index, GidType type) {
  return gid(index, type, {0xfe, 0x80}, {0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55});
}
GidEntry global_v6(int index, GidType type) { return gid(index, type, {0x20, 0x01, 0x0d, 0xb8}, {0x01}); }
GidEntry ipv4_mapped(int index, GidType type) { return gid(index, type, {}, {0xff, 0xff, 10, 0, 0, 1}); }

TEST(VerbsRules, InitiatorDepthFromInitRdAtomResponderFromRdAtom) {
  // A device that may issue 4 reads per QP and serve 16: the far end unknown.
  verbs::ReadDepths d = verbs::read_depths(4, 16, 0, 0);
  EXPECT_EQ(d.initiator, 4);
  EXPECT_EQ(d.responder, 16);
  // The far end serves 2 and issues 8: each depth is the smaller of the two ends'.
  d = verbs::read_depths(4, 16, 8, 2);
  EXPECT_EQ(d.initiator, 2);
  EXPECT_EQ(d.responder, 8);
  // Within 1..16.
  d = verbs::read_depths(0, 64, 0, 0);
  EXPECT_EQ(d.initiator, 1);
  EXPECT_EQ(d.responder, 16);
}

TEST(VerbsRules, GidTypesAsSysfsNamesThem) {
  EXPECT_EQ(verbs::gid_type_from_sysfs("RoCE v2\n", true), GidType::roce_v2);
  EXPECT_EQ(verbs::gid_type_from_sysfs("IB/RoCE v1\n", true), GidType::roce_v1);
  EXPECT_EQ(verbs::gid_type_from_sysfs("IB/RoCE v1", false), GidType::ib);
  EXPECT_EQ(verbs::gid_type_from_sysfs("", true), GidType::unknown);
  EXPECT_TRUE(verbs::gid_is_ipv4_mapped(ipv4_mapped(0, GidType::roce_v2).raw));
  EXPECT_FALSE(verbs::gid_is_ipv4_mapped(global_v6(0, GidType::roce_v2).raw));
  EXPECT_TRUE(verbs::gid_is_link_local(link_local(0, GidType::roce_v2).raw));
  EXPECT_EQ(verbs::gid_text(ipv4_mapped(0, GidType::roce_v2).raw), "::ffff:10.0.0.1");
}

TEST(VerbsRules, RoceGidIsRoceV2PreferringIpv4Mapped) {
  std::vector<GidEntry> table = {link_local(0, GidType::roce_v1),  link_local(1, GidType::roce_v2),
                                 global_v6(2, GidType::roce_v1),   global_v6(3, GidType::roce_v2),
                                 ipv4_mapped(4, GidType::roce_v1), ipv4_mapped(5, GidType::roce_v2),
                                 ipv4_mapped(6, GidType::roce_v2)};
  auto pick = [&] {
    auto i = verbs::choose_roce_gid(table, "mlx5_0", 1);
    EXPECT_TRUE(i.has_value()) << (i ? "" : i.error().message);
    return i ? *i : -1;
  };
  EXPECT_EQ(pick(), 5);  // IPv4-mapped RoCE v2, the lowest index of two
  table.erase(table.begin() + 5, table.end());
  EXPECT_EQ(pick(), 3);  // then RoCE v2 that is not link-local
  table.erase(table.begin() + 3);
  EXPECT_EQ(pick(), 1);  // then any RoCE v2
  // Empty slots never count, whatever their type says.
  table.push_back(gid(9, GidType::roce_v2, {}));
  table.erase(table.begin() + 1);
  auto none = verbs::choose_roce_gid(table, "mlx5_0", 1);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("mlx5_0 port 1 has no RoCE v2 GID"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("0 fe80::"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("gid_index"), std::string::npos) << none.error().message;
  none = verbs::choose_roce_gid({}, "rxe0", 2);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("rxe0 port 2"), std::string::npos) << none.error().message;
}

TEST(VerbsRules, GlobalRouteHeaderOnRoceAlwaysOnInfinibandWhenAGidIsGiven) {
  EXPECT_TRUE(verbs::needs_grh(true, false));
  EXPECT_TRUE(verbs::needs_grh(true, true));
  EXPECT_FALSE(verbs::needs_grh(false, false));
  EXPECT_TRUE(verbs::needs_grh(false, true));
}

TEST(VerbsRules, MessageLimitIsThePortsMaxMsgSz) {
  EXPECT_EQ(verbs::message_limit(uint64_t{1} << 30), uint64_t{1} << 30);
  EXPECT_EQ(verbs::message_limit(0), uint64_t{1} << 31);
  EXPECT_EQ(verbs::message_limit(uint64_t{1} << 40), std::numeric_limits<uint32_t>::max());
  EXPECT_TRUE(verbs::check_message_size(uint64_t{1} << 30, uint64_t{1} << 30, "mlx5_0", 1).ok());
  const Status over = verbs::check_message_size((uint64_t{1} << 30) + 1, uint64_t{1} << 30, "mlx5_0", 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind, ErrorKind::input);
  for (const char* want : {"1073741825", "1073741824", "mlx5_0 port 1", "max_msg_sz"}) {
    EXPECT_NE(over.error().message.find(want), std::string::npos) << want << ": " << over.error().message;
  }
}

TEST(VerbsRules, LatencyFollowsPerftestPerOperation) {
  EXPECT_TRUE(verbs::is_ping_pong(verbs::Verb::write, true));
  EXPECT_TRUE(verbs::is_ping_pong(verbs::Verb::send, true));
  EXPECT_FALSE(verbs::is_ping_pong(verbs::Verb::read, true));
  EXPECT_FALSE(verbs::is_ping_pong(verbs::Verb::write, false));
  verbs::LatencyFigures f = verbs::latency_figures(verbs::Verb::write, 4e-6);
  EXPECT_DOUBLE_EQ(f.round_trip_us, 4.0);
  EXPECT_DOUBLE_EQ(f.latency_us, 2.0);
  EXPECT_EQ(f.latency_is, "half the ping-pong round trip, as ib_write_lat");
  f = verbs::latency_figures(verbs::Verb::send, 6e-6);
  EXPECT_DOUBLE_EQ(f.latency_us, 3.0);
  EXPECT_EQ(f.latency_is, "half the ping-pong round trip, as ib_send_lat");
  f = verbs::latency_figures(verbs::Verb::read, 4e-6);
  EXPECT_DOUBLE_EQ(f.round_trip_us, 4.0);
  EXPECT_DOUBLE_EQ(f.latency_us, 4.0);
  EXPECT_EQ(f.latency_is, "the read's round trip, as ib_read_lat");
}

verbs::FarEndRequest request() {
  verbs::FarEndRequest r;
  r.fd = 900;
  r.device = "mlx5_1";
  r.port = 2;
  r.gid_index = -1;
  r.settings = verbs::Settings{2048, 3, 32, 128, 4};
  r.bytes = 65536;
  r.verb = verbs::Verb::send;
  r.ping_pong = true;
  return r;
}

TEST(VerbsRules, FarEndRequestRoundTripsAndRefusesWhatIsMalformed) {
  auto back = verbs::parse_far_end_request(verbs::far_end_request_text(request()));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->fd, 900);
  EXPECT_EQ(back->device, "mlx5_1");
  EXPECT_EQ(back->port, 2);
  EXPECT_EQ(back->gid_index, -1);
  EXPECT_EQ(back->settings.mtu, 2048);
  EXPECT_EQ(back->settings.qps, 3);
  EXPECT_EQ(back->settings.outstanding, 32);
  EXPECT_EQ(back->settings.inline_bytes, 128);
  EXPECT_EQ(back->settings.signal_every, 4);
  EXPECT_EQ(back->bytes, 65536u);
  EXPECT_EQ(back->verb, verbs::Verb::send);
  EXPECT_TRUE(back->ping_pong);
  auto refused = [](const std::function<void(Json&)>& edit, const std::string& why) {
    Json j = Json::parse(verbs::far_end_request_text(request()));
    edit(j);
    auto r = verbs::parse_far_end_request(j.dump());
    ASSERT_FALSE(r.has_value()) << j.dump();
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
  };
  refused([](Json& j) { j.erase("fd"); }, "no 'fd'");
  refused([](Json& j) { j["fd"] = 1; }, "'fd' must be an integer");
  refused([](Json& j) { j["mtu"] = 1000; }, "'mtu' must be 256");
  refused([](Json& j) { j["qps"] = 65; }, "'qps' must be an integer 1..64");
  refused([](Json& j) { j["bytes"] = "64"; }, "'bytes' must be an integer");
  refused([](Json& j) { j["verb"] = "atomic"; }, "'verb' must be write, read or send");
  refused([](Json& j) { j["device"] = 3; }, "'device' must be a string");
  refused([](Json& j) { j["verb"] = "read"; }, "'ping_pong' applies to write and send");
  auto text = verbs::parse_far_end_request("{not json");
  ASSERT_FALSE(text.has_value());
  EXPECT_NE(text.error().message.find("not a JSON object"), std::string::npos);
}

TEST(VerbsFarEnd, RefusesMalformedArgumentsWithExit2) {
  if (!ACCELTUNE_TEST_WITH_VERBS) GTEST_SKIP() << "this build has no verbs kernel (libibverbs was not found)";
  test::CliResult r = test::run_cli({"__verbs-far-end"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("__verbs-far-end takes one argument, the request (JSON)"), std::string::npos) << r.err;
  r = test::run_cli({"__verbs-far-end", "{not json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("__verbs-far-end: malformed request: the request is not a JSON object"), std::string::npos)
      << r.err;
  Json j = Json::parse(verbs::far_end_request_text(request()));
  j["mtu"] = 1000;
  r = test::run_cli({"__verbs-far-end", j.dump()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("malformed request: 'mtu' must be 256"), std::string::npos) << r.err;
  // Well formed, but without the socket it names.
  r = test::run_cli({"__verbs-far-end", verbs::far_end_request_text(request())});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("descriptor 900 is not open"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace acceltune
