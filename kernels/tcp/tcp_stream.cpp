// tcp-stream: a sender and a receiver moving a stream of non-zero bytes over TCP. This file is
// the kernel: its params, placements, measurement and registration. The sending side's session
// and data connections are in tcp_stream_sender.cpp, the receiving side in tcp_stream_receiver.cpp,
// what both ends share in tcp_stream_io.hpp.
//
// Params: the link MTU (mtu), SO_SNDBUF / SO_RCVBUF (sndbuf, rcvbuf; 0 leaves the kernel's
// autotuning alone), parallel streams (streams, a thread each), the size of each write and read
// (write_size), TCP_NODELAY (nodelay), zero-copy send (zerocopy: none, msg_zerocopy, sendfile
// from a memfd), congestion control (congestion) and the offset of the buffers from page
// alignment (align).
//
// One run of N bytes: the sender moves N bytes split over the streams, each stream's receiver
// acknowledges its share with one byte on the same connection, and the run ends when every
// acknowledgement has arrived. Receivers count what they got; after timing, one extra run has
// the receiver compare each byte with the expected pattern at its offset.
//
// The far end is the "tcp-stream" handler of a control server (kernels/shared/peer.hpp):
// - loopback (default): a server on threads of this process on 127.0.0.1; lo's MTU is not
//   changed, so a space's mtu is held at its default;
// - netns: two network namespaces this process creates and owns (kernels/netns.hpp), the
//   receivers' threads in one, the senders' in the other, the veth pair's MTU set per trial;
// - peer: `acceltune serve` on another host; an MTU changes only on links named by the space
//   ("link", this side) and by `serve --link` (the other side), and needs root on both.
//
// Control protocol (JSON lines of an authenticated session, kernels/shared/control_auth.cpp: each
// carries "seq" and "mac"; the client sends, the server answers each with {"ok": ...}):
//   hello {"kind": "tcp-stream", "version": 1}        -> link, link_mtu (of --link, else of the
//                                                        interface served on), congestion available
//   {"op": "setup", streams, rcvbuf, congestion, write_size, align, mtu?}
//        -> {"port": P}; the client connects `streams` data connections to P, each sending its
//           4-byte stream index and the session's token for it first (the setup's sequence
//           number and the index under the data key); a connection without the token is refused
//           and logged, and none of its bytes count -> {"rcvbuf_bytes", "congestion"}
//   {"op": "size", "shares": [...], "offsets": [...]}  -> receivers expect these shares per run
//   {"op": "validate"} -> armed; the next run is compared byte by byte -> {"mismatches",
//        "first_mismatch", "received_bytes" (since the size op or the last validation)}
//   {"op": "bye"}
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>

#include "kernels/tcp/tcp_stream.hpp"

namespace acceltune::tcp_stream {
namespace {

constexpr const char* kNetnsEnv = "ACCELTUNE_TCP_NETNS";

// Congestion control modules of Linux: a name outside this list is a typo, not a missing module.
const std::set<std::string>& known_congestion() {
  static const std::set<std::string> k = {"reno",     "cubic", "bbr",      "bbr2",  "bbr3",     "bic",
                                          "dctcp",    "htcp",  "highspeed", "hybla", "illinois", "lp",
                                          "nv",       "scalable", "vegas",   "veno",  "westwood", "yeah",
                                          "cdg",      "prague"};
  return k;
}

// One process-wide pair of namespaces, shared by the kernels of this process.
Expected<std::shared_ptr<NetnsPair>> shared_netns_pair() {
  static std::mutex mu;
  static std::weak_ptr<NetnsPair> pair;
  std::lock_guard<std::mutex> l(mu);
  if (auto p = pair.lock()) return p;
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<NetnsPair> created, NetnsPair::create());
  std::shared_ptr<NetnsPair> p(std::move(created));
  pair = p;
  return p;
}

bool netns_exists(const std::string& name) { return ::access(("/run/netns/" + name).c_str(), F_OK) == 0; }

}  // namespace

TcpStream::~TcpStream() {
  release_placement();
  if (memfd_ >= 0) ::close(memfd_);
}

const NativeTable& TcpStream::native_table() const {
  static const NativeTable table = [] {
    NativeTable t = {
        integer_param("mtu", 576, 65535, 1500, "bytes", "the link's MTU (netns and peer placements set it)"),
        integer_param("sndbuf", 0, 1 << 30, 0, "bytes", "SO_SNDBUF of each data socket; 0 leaves autotuning on"),
        integer_param("rcvbuf", 0, 1 << 30, 0, "bytes", "SO_RCVBUF of each data socket; 0 leaves autotuning on"),
        integer_param("streams", 1, 128, 1, "connections", "parallel data connections, each its share"),
        integer_param("write_size", 1, 256 << 20, 128 << 10, "bytes", "bytes per send call"),
        bool_param("nodelay", false, "TCP_NODELAY on the data sockets"),
        choice_param("zerocopy", {"none", "msg_zerocopy", "sendfile"}, "none",
                     "plain send, MSG_ZEROCOPY, or sendfile from a memfd"),
        choice_param("congestion", {}, "cubic",
                     "TCP_CONGESTION of the data sockets (net.ipv4.tcp_available_congestion_control)"),
        integer_param("align", 0, kPage - 1, 0, "bytes", "the send buffer's offset from a page"),
    };
    t[7].domain = "this host's congestion controls";
    return t;
  }();
  return table;
}

Status TcpStream::attach(Space& space) {
  const Json& x = space.extra();
  placement_ = x.contains("placement") && x["placement"].is_string() ? x["placement"].get<std::string>() : "loopback";
  ACCELTUNE_TRY(check_params(space));
  ::signal(SIGPIPE, SIG_IGN);  // sendfile to a closed connection

  std::vector<std::function<bool(const Config&)>> keep;
  std::vector<std::string> why;
  ACCELTUNE_TRY(restrict_congestion(space, keep, why));
  const auto mtu_k = space.param_index("mtu");
  const bool mtu_varies = mtu_k && space.params()[*mtu_k].values.size() > 1;
  if (placement_ == "loopback" && mtu_varies) {
    hold_mtu_at_default(space, *mtu_k, keep, why, "the loopback placement does not change lo's MTU; use --netns (root)");
  }

  if (placement_ == "netns") {
    if (const char* env = std::getenv(kNetnsEnv); env && *env) {
      // A worker of a study (or a script) hands us namespaces that exist already.
      ACCELTUNE_TRY_ASSIGN(ns_, NetnsPairInfo::from_text(env));
      for (const auto& n : {ns_.server, ns_.client}) {
        if (!netns_exists(n)) {
          return runtime_error("{}={} names network namespace '{}', which does not exist", kNetnsEnv, env, n);
        }
      }
    } else {
      ACCELTUNE_TRY_ASSIGN(pair_, shared_netns_pair());
      ns_ = pair_->info();
      // Trials in worker processes reuse these namespaces; they never create their own.
      ::setenv(kNetnsEnv, ns_.to_text().c_str(), 1);
      set_env_ = true;
    }
  } else if (placement_ == "peer") {
    if (!x.contains("peer") || !x["peer"].is_string()) {
      return input_error("{}: placement 'peer' needs a field 'peer' (HOST:PORT); use --peer", space.source());
    }
    ACCELTUNE_TRY_ASSIGN(auto hp, parse_host_port(x["peer"].get<std::string>()));
    peer_host_ = hp.first;
    peer_port_ = hp.second;
    local_link_ = x.value("link", "");
    // Connect now: an unreachable peer is one line before the study starts, not a failed trial each.
    ACCELTUNE_TRY(open_session());
    if (mtu_varies) {
      std::string missing;
      if (local_link_.empty()) missing = "the space names no \"link\" (this host's interface)";
      else if (!may_manage_netns()) missing = "changing this host's MTU needs root";
      else if (!hello_.value("may_set_mtu", false)) {
        missing = hello_.value("link", "").empty() ? "the server was started without 'acceltune serve --link IFACE'"
                                                   : "the server may not change its link's MTU (not root)";
      }
      if (missing.empty()) {
        peer_sets_mtu_ = true;
      } else {
        hold_mtu_at_default(space, *mtu_k, keep, why,
                            "with --peer an MTU changes only on links acceltune was pointed at (a \"link\" in the "
                            "space and 'acceltune serve --link IFACE', both as root), and " + missing);
      }
    }
  }
  if (!keep.empty()) {
    std::string what;
    for (const auto& w : why) what += (what.empty() ? "" : "; ") + w;
    space.set_membership(
        [keep](const Config& c) {
          for (const auto& f : keep) {
            if (!f(c)) return false;
          }
          return true;
        },
        what);
  }
  return {};
}

Measurement TcpStream::measure(const Space& space, const Config& config, uint64_t bytes,
                               const MeasureSettings& settings, const MeasureContext&) {
  Measurement m;
  m.bytes = bytes;
  for (const auto& n : notes_) {
    std::fprintf(stderr, "%sacceltune: note: %s\n", ::isatty(STDERR_FILENO) ? "\r\033[K" : "", n.c_str());
  }
  notes_.clear();
  const Settings s = read(space, config);
  auto failed = [&](const Error& e) {
    close_session();  // a broken session is rebuilt by the next measurement
    m.state = State::failed;
    m.error = e.message;
    return m;
  };
  Status st = prepare(s, bytes);
  if (!st) return failed(st.error());

  // The timed region: every stream's share out, every acknowledgement back.
  failed_ = false;
  for (auto& d : data_) d.zc_sent = d.zc_completed = d.zc_copied = 0;
  runs_ = 0;
  const std::function<void(int)> stream_run = [this](int t) { run_stream(t); };
  Measurement timed = measure_timed(bytes, [&] {
    if (failed_.load(std::memory_order_relaxed)) return;
    team_->run(stream_run);
    ++runs_;
  }, settings);
  if (failed_) return failed(runtime_error("tcp-stream: {}", first_run_error()));
  m = std::move(timed);

  // Validation outside the timing: one more run that the receiver compares byte by byte.
  auto v = request(Json{{"op", "validate"}});
  if (!v) return failed(v.error());
  team_->run(stream_run);
  if (failed_) return failed(runtime_error("tcp-stream: validation run: {}", first_run_error()));
  auto r = ctrl_.recv(kControlTimeout);
  if (!r) return failed(r.error());
  if (!r->value("ok", false)) return failed(runtime_error("{}", r->value("error", std::string("validation failed"))));
  const uint64_t expected = (runs_ + 1) * bytes;
  const uint64_t received = r->value("received_bytes", uint64_t{0});
  const uint64_t mismatches = r->value("mismatches", uint64_t{0});

  Json& d = m.details;
  d["placement"] = placement_;
  if (placement_ == "netns") d["netns"] = ns_.server;
  d["mss_bytes"] = mss_;
  // The buffers after the runs: what autotuning grew them to, or what a fixed size became.
  d["sndbuf_bytes"] = get_int_opt(data_.front().fd, SOL_SOCKET, SO_SNDBUF);
  d["rcvbuf_bytes"] = r->value("rcvbuf_bytes", rcvbuf_effective_);
  d["link_mtu"] = link_mtu_;
  d["path_mtu"] = path_mtu_;
  d["congestion"] = congestion_in_use_;
  d["streams"] = s.streams;
  d["runs"] = runs_ + 1;
  d["received_bytes"] = received;
  if (s.zerocopy == Zerocopy::msg_zerocopy) {
    uint64_t done = 0, copied = 0;
    for (const auto& st2 : data_) {
      done += st2.zc_completed;
      copied += st2.zc_copied;
    }
    d["zerocopy_completions"] = done;
    d["zerocopy_copied"] = copied;  // completions whose data the kernel copied after all
  }
  if (received != expected) {
    m.state = State::invalid;
    m.error = fmt::format("the receiver counted {} bytes over {} runs of {}, expected {}", received, runs_ + 1, bytes,
                          expected);
  } else if (mismatches > 0) {
    m.state = State::invalid;
    m.error = fmt::format("the receiver found {} bytes that differ from what was sent (first at offset {})",
                          mismatches, r->value("first_mismatch", uint64_t{0}));
  }
  return m;
}

// The table checks every value's domain before attach; the congestion controls are this host's.
Status TcpStream::check_params(const Space& space) const {
  for (const auto& p : space.params()) {
    if (!p.env.empty() || p.name != "congestion") continue;
    for (const auto& v : p.values) {
      const std::string text = to_string(v);
      if (!known_congestion().count(text)) {
        const auto have = available_congestion();
        return input_error("{}: param 'congestion' value '{}' is not a TCP congestion control (this host has: {})",
                           space.source(), text, join_names(have));
      }
    }
  }
  return {};
}

void TcpStream::hold_mtu_at_default(const Space& space, size_t k, std::vector<std::function<bool(const Config&)>>& keep,
                                    std::vector<std::string>& why, const std::string& reason) {
  const Param& p = space.params()[k];
  const uint32_t d = static_cast<uint32_t>(p.default_index);
  keep.push_back([k, d](const Config& c) { return c.index[k] == d; });
  why.push_back(fmt::format("mtu is held at its default {}: {}", to_string(p.default_value()), reason));
  std::string others;
  for (size_t i = 0; i < p.values.size(); ++i) {
    if (i != p.default_index) others += (others.empty() ? "" : ", ") + to_string(p.values[i]);
  }
  notes_.push_back(fmt::format("tcp-stream over {}: param 'mtu' is held at its default {} ({} left out): {}",
                               placement_, to_string(p.default_value()), others, reason));
}

Status TcpStream::restrict_congestion(Space& space, std::vector<std::function<bool(const Config&)>>& keep,
                                      std::vector<std::string>& why) {
  const auto k = space.param_index("congestion");
  if (!k || !space.params()[*k].env.empty()) return {};
  const auto have = available_congestion();
  // A host setting starts from the host's own value: trial 0 runs the congestion control a plain
  // socket here gets, so a plan never replaces it with a space's default unmeasured.
  std::ifstream f("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string host_default;
  f >> host_default;
  const std::string listed = to_string(space.params()[*k].default_value());
  if (!host_default.empty() && host_default != listed && known_congestion().count(host_default) &&
      std::find(have.begin(), have.end(), host_default) != have.end()) {
    ACCELTUNE_TRY_ASSIGN(const bool grew, space.set_default_value("congestion", Value{host_default}));
    notes_.push_back(fmt::format("tcp-stream: trial 0 runs this host's congestion control, {} (the space lists {} as "
                                 "its default{})",
                                 host_default, listed, grew ? fmt::format("; {} joins the domain", host_default) : ""));
  }
  const Param& p = space.params()[*k];
  std::vector<bool> ok_index;
  std::vector<std::string> missing;
  for (const auto& v : p.values) {
    const bool there = std::find(have.begin(), have.end(), to_string(v)) != have.end();
    ok_index.push_back(there);
    if (!there) missing.push_back(to_string(v));
  }
  if (missing.empty()) return {};
  if (!ok_index[p.default_index]) {
    return input_error("{}: the default congestion control '{}' is not available on this host (it has: {})",
                       space.source(), to_string(p.default_value()), join_names(have));
  }
  const size_t idx = *k;
  keep.push_back([idx, ok_index](const Config& c) { return ok_index[c.index[idx]]; });
  why.push_back(fmt::format("congestion control not available here ({})", join_names(missing)));
  notes_.push_back(fmt::format("tcp-stream: congestion control {} not available on this host (it has: {}); configs "
                               "using {} are left out",
                               join_names(missing), join_names(have), missing.size() == 1 ? "it" : "them"));
  return {};
}

Settings TcpStream::read(const Space& space, const Config& c) const {
  const NativeValues v(native_table(), space, c);
  Settings s;
  s.mtu = static_cast<int>(v.integer("mtu"));
  s.sndbuf = v.integer("sndbuf");
  s.rcvbuf = v.integer("rcvbuf");
  s.streams = static_cast<int>(v.integer("streams"));
  s.write_size = v.integer("write_size");
  s.nodelay = v.boolean("nodelay");
  s.align = v.integer("align");
  s.congestion = v.choice("congestion");
  const std::string& z = v.choice("zerocopy");
  s.zerocopy = z == "msg_zerocopy" ? Zerocopy::msg_zerocopy : z == "sendfile" ? Zerocopy::sendfile : Zerocopy::none;
  return s;
}

Json TcpStream::link() const {
  if (placement_ == "netns") return Json{{"kind", "veth"}};
  if (placement_ != "peer") return Json{{"kind", "loopback"}};
  // The interface named for the MTU, else the one the routes use toward the peer.
  const std::string iface = local_link_.empty() ? interface_toward(peer_host_) : local_link_;
  if (iface.empty()) return nullptr;
  if (iface == "lo") return Json{{"kind", "loopback"}};
  Json l{{"kind", "nic"}, {"interface", iface}};
  // The far end's MTU, from its hello: one below it on this side is a suggestion.
  if (hello_.contains("link_mtu") && hello_["link_mtu"].is_number_integer()) l["peer_mtu"] = hello_["link_mtu"];
  return l;
}

void TcpStream::release_placement() {
  close_session();
  server_.reset();
  if (set_env_) {
    ::unsetenv(kNetnsEnv);
    set_env_ = false;
  }
  pair_.reset();
}

ACCELTUNE_REGISTER_KERNEL("tcp-stream",
                          "a TCP stream between two ends (MTU, socket buffers, streams, write size, nodelay, "
                          "zero-copy, congestion control, alignment); loopback, --netns or --peer",
                          TcpStream)

}  // namespace acceltune::tcp_stream
