// The definitions behind kernels/rdma/verbs_rules.hpp: the decisions of the verbs kernel that need
// no RDMA device, as plain functions.
#include "kernels/rdma/verbs_rules.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <limits>

#include "tuner/value.hpp"

namespace acceltune::verbs {

const char* to_string(Verb v) {
  switch (v) {
    case Verb::write: return "write";
    case Verb::read: return "read";
    case Verb::send: return "send";
  }
  return "write";
}

ReadDepths read_depths(int local_init_rd_atom, int local_rd_atom, int far_init_rd_atom, int far_rd_atom) {
  auto bound = [](int local, int far) { return std::clamp(far > 0 ? std::min(local, far) : local, 1, 16); };
  return ReadDepths{bound(local_init_rd_atom, far_rd_atom), bound(local_rd_atom, far_init_rd_atom)};
}

GidType gid_type_from_sysfs(std::string_view text, bool ethernet) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text == "RoCE v2") return GidType::roce_v2;
  if (text == "IB/RoCE v1" || text == "RoCE v1") return ethernet ? GidType::roce_v1 : GidType::ib;
  if (text == "IB") return GidType::ib;
  return GidType::unknown;
}

bool gid_is_zero(const std::array<uint8_t, 16>& g) {
  return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

bool gid_is_ipv4_mapped(const std::array<uint8_t, 16>& g) {
  return std::all_of(g.begin(), g.begin() + 10, [](uint8_t b) { return b == 0; }) && g[10] == 0xff && g[11] == 0xff;
}

bool gid_is_link_local(const std::array<uint8_t, 16>& g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

std::string gid_text(const std::array<uint8_t, 16>& g) {
  char s[INET6_ADDRSTRLEN] = {};
  if (!::inet_ntop(AF_INET6, g.data(), s, sizeof s)) return "?";
  return s;
}

Expected<int> choose_roce_gid(const std::vector<GidEntry>& table, const std::string& device, int port) {
  // Lower rank wins, then the lower index.
  auto rank = [](const GidEntry& e) {
    if (e.type != GidType::roce_v2 || gid_is_zero(e.raw)) return 3;
    if (gid_is_ipv4_mapped(e.raw)) return 0;
    return gid_is_link_local(e.raw) ? 2 : 1;
  };
  const GidEntry* best = nullptr;
  for (const auto& e : table) {
    if (rank(e) < 3 && (!best || rank(e) < rank(*best) || (rank(e) == rank(*best) && e.index < best->index))) best = &e;
  }
  if (best) return best->index;
  std::string held;
  for (const auto& e : table) {
    if (gid_is_zero(e.raw)) continue;
    const char* t = e.type == GidType::roce_v1 ? "RoCE v1" : e.type == GidType::ib ? "IB" : "type unknown";
    held += fmt::format("{}{} {} ({})", held.empty() ? "" : ", ", e.index, gid_text(e.raw), t);
  }
  return runtime_error(
      "{} port {} has no RoCE v2 GID ({}); give its network interface an IP address, or set the space's gid_index",
      device, port, held.empty() ? "its GID table is empty" : "it holds " + held);
}

bool needs_grh(bool ethernet, bool gid_given) { return ethernet || gid_given; }

uint64_t message_limit(uint64_t port_max_msg_sz) {
  const uint64_t limit = port_max_msg_sz == 0 ? uint64_t{1} << 31 : port_max_msg_sz;
  return std::min<uint64_t>(limit, std::numeric_limits<uint32_t>::max());
}

Status check_message_size(uint64_t bytes, uint64_t port_max_msg_sz, const std::string& device, int port) {
  const uint64_t limit = message_limit(port_max_msg_sz);
  if (bytes <= limit) return {};
  return input_error("a message of {} bytes is over the {} bytes that {} port {} takes (its max_msg_sz); "
                     "measure smaller sizes",
                     bytes, limit, device, port);
}

bool is_ping_pong(Verb v, bool latency) { return latency && v != Verb::read; }

LatencyFigures latency_figures(Verb v, double seconds_per_iteration) {
  LatencyFigures f;
  f.round_trip_us = seconds_per_iteration * 1e6;
  if (v == Verb::read) {
    f.latency_us = f.round_trip_us;
    f.latency_is = "the read's round trip, as ib_read_lat";
  } else {
    f.latency_us = f.round_trip_us / 2;
    f.latency_is = fmt::format("half the ping-pong round trip, as ib_{}_lat", to_string(v));
  }
  return f;
}

std::string far_end_request_text(const FarEndRequest& r) {
  const Json j = {{"fd", r.fd},
                  {"device", r.device},
                  {"port", r.port},
                  {"gid_index", r.gid_index},
                  {"mtu", r.settings.mtu},
                  {"qps", r.settings.qps},
                  {"outstanding", r.settings.outstanding},
                  {"inline_bytes", r.settings.inline_bytes},
                  {"signal_every", r.settings.signal_every},
                  {"bytes", r.bytes},
                  {"verb", to_string(r.verb)},
                  {"ping_pong", r.ping_pong}};
  return j.dump();
}

Expected<FarEndRequest> parse_far_end_request(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return input_error("the request is not a JSON object");
  auto integer = [&](const char* name, int64_t lo, int64_t hi) -> Expected<int64_t> {
    if (!j.contains(name)) return input_error("the request has no '{}'", name);
    const Json& v = j[name];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      return input_error("'{}' must be an integer {}..{}", name, lo, hi);
    }
    return v.get<int64_t>();
  };
  FarEndRequest r;
  // 0..2 are the standard streams; the socket is always above them.
  ACCELTUNE_TRY_ASSIGN(const int64_t fd, integer("fd", 3, 1 << 20));
  ACCELTUNE_TRY_ASSIGN(const int64_t port, integer("port", 0, 255));
  ACCELTUNE_TRY_ASSIGN(const int64_t gid, integer("gid_index", -1, 255));
  ACCELTUNE_TRY_ASSIGN(const int64_t mtu, integer("mtu", 256, 4096));
  if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
    return input_error("'mtu' must be 256, 512, 1024, 2048 or 4096");
  }
  ACCELTUNE_TRY_ASSIGN(const int64_t qps, integer("qps", 1, kMaxQps));
  ACCELTUNE_TRY_ASSIGN(const int64_t outstanding, integer("outstanding", 1, 4096));
  ACCELTUNE_TRY_ASSIGN(const int64_t inl, integer("inline_bytes", 0, 1024));
  ACCELTUNE_TRY_ASSIGN(const int64_t signal, integer("signal_every", 1, 4096));
  ACCELTUNE_TRY_ASSIGN(const int64_t bytes, integer("bytes", 1, std::numeric_limits<uint32_t>::max()));
  if (!j.contains("device") || !j["device"].is_string()) return input_error("'device' must be a string");
  const std::string verb = j.contains("verb") && j["verb"].is_string() ? j["verb"].get<std::string>() : "";
  if (verb == "write") r.verb = Verb::write;
  else if (verb == "read") r.verb = Verb::read;
  else if (verb == "send") r.verb = Verb::send;
  else return input_error("'verb' must be write, read or send");
  if (!j.contains("ping_pong") || !j["ping_pong"].is_boolean()) return input_error("'ping_pong' must be true or false");
  r.fd = static_cast<int>(fd);
  r.device = j["device"].get<std::string>();
  r.port = static_cast<int>(port);
  r.gid_index = static_cast<int>(gid);
  r.settings = Settings{static_cast<int>(mtu), static_cast<int>(qps), static_cast<int>(outstanding),
                        static_cast<int>(inl), static_cast<int>(signal)};
  r.bytes = static_cast<uint64_t>(bytes);
  r.ping_pong = j["ping_pong"].get<bool>();
  if (r.ping_pong && r.verb == Verb::read) return input_error("'ping_pong' applies to write and send, not read");
  return r;
}

}  // namespace acceltune::verbs
