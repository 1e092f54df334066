// The decisions of the verbs kernel that need no RDMA device, as plain functions: the read and
// atomic depths of a queue pair, the choice of a RoCE GID and whether an address needs a global
// route header, the largest message a port takes, what a latency figure means, and the request
// that starts the far end. kernels/verbs.cpp applies them to a device; the tests check them on
// any machine.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/expected.hpp"

namespace acceltune::verbs {

enum class Verb { write, read, send };
const char* to_string(Verb v);

constexpr int kMaxQps = 64;

// The tuned params of one measurement.
struct Settings {
  int mtu = 4096;
  int qps = 1;
  int outstanding = 16;
  int inline_bytes = 0;
  int signal_every = 1;
};

// Outstanding RDMA reads and atomics of a queue pair. The initiator depth (ibv_qp_attr.max_rd_atomic)
// is bounded by this device's max_qp_init_rd_atom and by what the far end accepts as a responder;
// the responder depth (max_dest_rd_atomic) by this device's max_qp_rd_atom and by what the far end
// may issue. A far limit of 0 is unknown and bounds nothing. Both are kept within 1..16: a device
// that reports 0 still takes 1, and more than 16 buys nothing for one stream of reads.
struct ReadDepths {
  int initiator = 1;  // max_rd_atomic
  int responder = 1;  // max_dest_rd_atomic
};
ReadDepths read_depths(int local_init_rd_atom, int local_rd_atom, int far_init_rd_atom, int far_rd_atom);

enum class GidType { ib, roce_v1, roce_v2, unknown };
struct GidEntry {
  int index = 0;
  GidType type = GidType::unknown;
  std::array<uint8_t, 16> raw{};
};

// The type as sysfs names it (ports/N/gid_attrs/types/INDEX): "IB/RoCE v1" is RoCE v1 on an
// Ethernet port and plain IB otherwise; "RoCE v2" is RoCE v2.
GidType gid_type_from_sysfs(std::string_view text, bool ethernet);
bool gid_is_zero(const std::array<uint8_t, 16>& g);
bool gid_is_ipv4_mapped(const std::array<uint8_t, 16>& g);  // ::ffff:a.b.c.d
bool gid_is_link_local(const std::array<uint8_t, 16>& g);   // fe80::/10
std::string gid_text(const std::array<uint8_t, 16>& g);

// The GID a RoCE port is addressed by when the space names none: RoCE v2 (routable, what
// perftest and NCCL use), preferring an IPv4-mapped address, then any other that is not link-local,
// then any RoCE v2 at all; the lowest index within each. Empty (all-zero) entries never count. An
// error naming the device, the port and what the table holds when it has no RoCE v2 entry.
Expected<int> choose_roce_gid(const std::vector<GidEntry>& table, const std::string& device, int port);

// Whether the address of the far end carries a global route header: always on RoCE, which has no
// LIDs; on InfiniBand only when the space names a GID (the ends on this host share a subnet).
bool needs_grh(bool ethernet, bool gid_given);

// The largest message a port takes: its max_msg_sz, within what a 32-bit scatter/gather length
// can say; 0 (not reported) is the InfiniBand limit, 2 GiB.
uint64_t message_limit(uint64_t port_max_msg_sz);
// An error naming the size, the limit and the device when `bytes` is over the limit.
Status check_message_size(uint64_t bytes, uint64_t port_max_msg_sz, const std::string& device, int port);

// Whether a latency op is a ping-pong (the far end answers each message): write_lat and send_lat,
// as ib_write_lat and ib_send_lat; read_lat is one read's round trip, as ib_read_lat.
bool is_ping_pong(Verb v, bool latency);

// The figures of a latency op from the seconds one timed iteration takes (one ping-pong, or one
// read): perftest's convention for `latency_us`, the round trip, and which of the two it is.
struct LatencyFigures {
  double latency_us = 0;
  double round_trip_us = 0;
  std::string latency_is;
};
LatencyFigures latency_figures(Verb v, double seconds_per_iteration);

// What the far end (`acceltune __verbs-far-end REQUEST_JSON`) is told: the descriptor of its end
// of the socket pair, the device and port, the GID index (-1: choose as above), the settings and
// the measured operation.
struct FarEndRequest {
  int fd = -1;
  std::string device;
  int port = 1;
  int gid_index = -1;
  Settings settings;
  uint64_t bytes = 0;
  Verb verb = Verb::write;
  bool ping_pong = false;
};
std::string far_end_request_text(const FarEndRequest& r);
// Every field present, of its type and in range; an error saying which is not.
Expected<FarEndRequest> parse_far_end_request(const std::string& text);

}  // namespace acceltune::verbs
