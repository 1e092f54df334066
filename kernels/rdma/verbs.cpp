// verbs: RDMA write, read and send between two processes over RC queue pairs on this host. The
// far end is the acceltune binary started again in the hidden mode __verbs-far-end with its own
// device context, as a second host would have; the two ends talk over a socket pair to exchange
// their queue pairs and memory. Operations write, read, send measure bandwidth with many
// messages in flight. The latency ops follow perftest, so their figures compare with its tools:
// write_lat and send_lat are a ping-pong on one queue pair (the far end answers each message
// with one of the same size, a write seen by polling the last byte of the buffer, or a send),
// and `latency_us` is half the round trip, as ib_write_lat and ib_send_lat report; read_lat
// times one read at a time, and `latency_us` is the read's whole round trip, as ib_read_lat
// reports. `round_trip_us` is the round trip in both, `latency_is` says which latency_us is.
// Params: path MTU, number of QPs, work requests in flight per QP, inline threshold,
// signalling interval; the message size is the measured size, at most the port's max_msg_sz.
// On RoCE the GID is the space's gid_index, else a RoCE v2 one chosen from the port's table.
//
// This file is the kernel's side and its measurement; the RDMA end of each process is in
// verbs_end.cpp, the far end and the exchange with it in verbs_far_end.cpp.
#include <infiniband/verbs.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/shared/child_process.hpp"
#include "kernels/shared/timed_external.hpp"
#include "kernels/rdma/verbs_end.hpp"
#include "kernels/rdma/verbs_far_end.hpp"
#include "kernels/rdma/verbs_rules.hpp"
#include "tuner/binary.hpp"
#include "tuner/kernel.hpp"

extern char** environ;

namespace acceltune {
namespace {

using verbs::Settings;
using verbs::Verb;
using verbs::End;
using verbs::EndInfo;
using verbs::kCmdCheck;
using verbs::kCmdQuit;
using verbs::kFarEndFd;
using verbs::kStepTimeoutSeconds;
using verbs::load_byte;
using verbs::recv_all;
using verbs::send_all;

// The far end's answer to a step: ok, or its message.
Status far_status(int fd) {
  int32_t ok = 0, len = 0;
  ACCELTUNE_TRY(recv_all(fd, &ok, sizeof ok, kStepTimeoutSeconds));
  ACCELTUNE_TRY(recv_all(fd, &len, sizeof len, kStepTimeoutSeconds));
  std::string msg(static_cast<size_t>(std::max(0, len)), '\0');
  ACCELTUNE_TRY(recv_all(fd, msg.data(), msg.size(), kStepTimeoutSeconds));
  if (!ok) return runtime_error("far end: {}", msg);
  return {};
}

// A bandwidth sample: `runs` messages round-robin over the queue pairs, each kept at most
// `outstanding` deep, one signalled completion per `signal_every` work requests; its seconds.
class Stream {
 public:
  Stream(End& end, const EndInfo& far, const Settings& s, Verb verb, uint64_t bytes, bool inl)
      : end_(end), far_(far), s_(s), verb_(verb), bytes_(bytes), inl_(inl), qps_(end.qp_count()),
        in_flight_(qps_, 0), since_signal_(qps_, 0), batch_(qps_) {}

  Expected<double> operator()(int64_t runs) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < runs; ++i) {
      const size_t q = static_cast<size_t>(i) % qps_;
      // A full queue, or every slot held by unsignalled WRs, waits for a completion.
      while (in_flight_[q] >= s_.outstanding) ACCELTUNE_TRY(reap(true));
      const bool last = i + static_cast<int64_t>(qps_) >= runs;  // each QP's last WR of the sample
      ACCELTUNE_TRY(post(q, last || in_flight_[q] + 1 >= s_.outstanding));
    }
    for (size_t q = 0; q < qps_; ++q) {
      while (in_flight_[q] > 0) ACCELTUNE_TRY(reap(true));
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  Status post(size_t q, bool force_signal) {
    ibv_sge sge{reinterpret_cast<uint64_t>(end_.buf()), static_cast<uint32_t>(bytes_), end_.mr()->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = verb_ == Verb::write ? IBV_WR_RDMA_WRITE : verb_ == Verb::read ? IBV_WR_RDMA_READ : IBV_WR_SEND;
    if (verb_ != Verb::send) {
      wr.wr.rdma.remote_addr = far_.addr;
      wr.wr.rdma.rkey = far_.rkey;
    }
    ++since_signal_[q];
    const bool signal = force_signal || since_signal_[q] >= s_.signal_every;
    wr.send_flags = (signal ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u) | (inl_ ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
    wr.wr_id = q;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(end_.qp(q), &wr, &bad) != 0) return runtime_error("ibv_post_send: {}", std::strerror(errno));
    ++in_flight_[q];
    if (signal) {
      batch_[q].push_back(since_signal_[q]);
      since_signal_[q] = 0;
    }
    return {};
  }

  Status reap(bool block) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStepTimeoutSeconds);
    for (;;) {
      ibv_wc wc[64];
      const int n = ibv_poll_cq(end_.cq(), 64, wc);
      if (n < 0) return runtime_error("ibv_poll_cq failed");
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) return runtime_error("work request failed: {}", ibv_wc_status_str(wc[i].status));
        const size_t q = wc[i].wr_id;
        // A signalled completion stands for itself and the unsignalled ones before it.
        in_flight_[q] -= batch_[q].front();
        batch_[q].erase(batch_[q].begin());
      }
      if (n > 0 || !block) return {};
      if (std::chrono::steady_clock::now() > until) return runtime_error("no completion within {} seconds", kStepTimeoutSeconds);
    }
  }

  End& end_;
  const EndInfo& far_;
  const Settings& s_;
  const Verb verb_;
  const uint64_t bytes_;
  const bool inl_;
  const size_t qps_;
  std::vector<int> in_flight_;        // posted, not yet known complete
  std::vector<int> since_signal_;     // unsignalled WRs since the last signalled one
  std::vector<std::vector<int>> batch_;  // per signalled WR: how many WRs it completes
};

// A latency sample: `runs` iterations of a ping-pong, a message out and the far end's answer
// back, each tagged in its last byte with a value the previous one did not have; its seconds.
class PingPong {
 public:
  PingPong(End& end, const EndInfo& far, Verb verb, uint64_t bytes, bool inl)
      : end_(end), far_(far), verb_(verb), bytes_(bytes), inl_(inl) {}

  Expected<double> operator()(int64_t runs) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < runs; ++i) {
      tag_ = static_cast<unsigned char>(tag_ % 255 + 1);
      if (verb_ == Verb::write) end_.buf()[bytes_ - 1] = tag_;
      ACCELTUNE_TRY(end_.post_reply(verb_, far_, bytes_, inl_));
      ACCELTUNE_TRY(await_answer(i));
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  // Until the message went and its answer came (a receive, or for a write the tag in place).
  Status await_answer(int64_t i) {
    bool sent = false, answered = false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStepTimeoutSeconds);
    for (uint64_t spins = 0; !(sent && answered); ++spins) {
      ibv_wc wc[4];
      const int n = ibv_poll_cq(end_.cq(), 4, wc);
      if (n < 0) return runtime_error("ibv_poll_cq failed");
      for (int k = 0; k < n; ++k) {
        if (wc[k].status != IBV_WC_SUCCESS) {
          return runtime_error("work request failed: {}", ibv_wc_status_str(wc[k].status));
        }
        if (wc[k].opcode & IBV_WC_RECV) {
          answered = true;
          ACCELTUNE_TRY(end_.post_recv(0, bytes_));
        } else {
          sent = true;
        }
      }
      if (verb_ == Verb::write && !answered) answered = load_byte(end_.dest() + bytes_ - 1) == tag_;
      if (spins % 4096 == 4095 && std::chrono::steady_clock::now() > until) {
        return runtime_error("the far end did not answer message {} of the ping-pong within {} seconds", i + 1,
                             kStepTimeoutSeconds);
      }
    }
    return {};
  }

  End& end_;
  const EndInfo& far_;
  const Verb verb_;
  const uint64_t bytes_;
  const bool inl_;
  unsigned char tag_ = 0;  // goes on across samples
};

class Verbs final : public Kernel {
 public:
  const NativeTable& native_table() const override {
    static const NativeTable table = [] {
      NativeTable t = {
          integer_param("mtu", 256, 4096, 1024, "bytes",
                        "the queue pairs' path MTU, at most the port's active MTU (1024: RoCE on a 1500-byte "
                        "link)"),
          integer_param("qps", 1, verbs::kMaxQps, 1, "queue pairs", "queue pairs the transfer is spread over"),
          integer_param("outstanding", 1, 4096, 16, "work requests", "posted and not yet completed, per queue pair"),
          integer_param("inline_bytes", 0, 1024, 0, "bytes", "largest message sent inline with its work request"),
          integer_param("signal_every", 1, 4096, 1, "work requests", "one signalled completion per this many"),
      };
      t[0].pow2 = true;
      return t;
    }();
    return table;
  }
  std::vector<std::string> placements() const override { return {"loopback"}; }

  Json link() const override { return Json{{"kind", "rdma"}, {"device", device_name_}, {"port", port_}}; }

  Status attach(Space& space) override {
    std::string op = space.operation();
    latency_ = op.size() > 4 && op.compare(op.size() - 4, 4, "_lat") == 0;
    if (latency_) op = op.substr(0, op.size() - 4);
    if (op == "write") verb_ = Verb::write;
    else if (op == "read") verb_ = Verb::read;
    else if (op == "send") verb_ = Verb::send;
    else {
      return input_error("{}: operation '{}' is not one of verbs' (write, read, send, write_lat, read_lat, send_lat)",
                         space.source(), space.operation());
    }
    const Json& x = space.extra();
    if (x.contains("device") && !x["device"].is_string()) return input_error("{}: field 'device' must be an RDMA device name", space.source());
    for (const char* f : {"port", "gid_index"}) {
      if (x.contains(f) && !(x[f].is_number_integer() && x[f].get<int64_t>() >= 0 && x[f].get<int64_t>() <= 255)) {
        return input_error("{}: field '{}' must be an integer 0..255", space.source(), f);
      }
    }
    device_ = x.value("device", "");
    port_ = x.value("port", 1);
    gid_index_ = x.value("gid_index", -1);  // -1: the port's default, chosen when the device opens
    // The device and its port's largest message, so a size over it is an invalid point, not a failure.
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) {
      if (list) ibv_free_device_list(list);
      return runtime_error("kernel 'verbs' needs an RDMA device; none found");
    }
    std::string present;
    ibv_device* dev = nullptr;
    for (int i = 0; i < n; ++i) {
      present += fmt::format("{}{}", present.empty() ? "" : ", ", ibv_get_device_name(list[i]));
      if (!dev && (device_.empty() || device_ == ibv_get_device_name(list[i]))) dev = list[i];
    }
    ibv_context* ctx = dev ? ibv_open_device(dev) : nullptr;
    if (dev) device_name_ = ibv_get_device_name(dev);
    ibv_free_device_list(list);
    if (!dev) return input_error("{}: no RDMA device named '{}' (present: {})", space.source(), device_, present);
    if (!ctx) return runtime_error("ibv_open_device {}: {}", device_name_, std::strerror(errno));
    ibv_port_attr pa{};
    const int rc = ibv_query_port(ctx, static_cast<uint8_t>(port_), &pa);
    ibv_close_device(ctx);
    if (rc != 0) {
      return input_error("{}: {} has no port {} ({})", space.source(), device_name_, port_, std::strerror(rc));
    }
    max_msg_sz_ = pa.max_msg_sz;
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    Settings s = read(space, config);
    if (latency_) s.outstanding = s.signal_every = 1;
    // A ping-pong runs on one queue pair, as perftest's: the far end answers on the one it heard.
    if (verbs::is_ping_pong(verb_, latency_)) s.qps = 1;
    if (s.signal_every > s.outstanding) {
      m.state = State::invalid;
      m.error = fmt::format("signal_every {} exceeds outstanding {}: completions could never free a slot",
                            s.signal_every, s.outstanding);
      return m;
    }
    if (bytes == 0) {
      m.state = State::invalid;
      m.error = "a verbs message has at least one byte";
      return m;
    }
    if (const Status fits = verbs::check_message_size(bytes, max_msg_sz_, device_name_, port_); !fits.ok()) {
      m.state = State::invalid;
      m.error = fits.error().message;
      return m;
    }
    auto r = run(s, bytes, settings, m);
    if (!r) {
      m = Measurement{};
      m.bytes = bytes;
      m.state = State::failed;
      m.error = r.error().message;
    }
    return m;
  }

 private:
  Settings read(const Space& space, const Config& c) const {
    const NativeValues v(native_table(), space, c);
    Settings s;
    for (auto [field, name] : {std::pair{&Settings::mtu, "mtu"}, {&Settings::qps, "qps"}, {&Settings::outstanding, "outstanding"},
                               {&Settings::inline_bytes, "inline_bytes"}, {&Settings::signal_every, "signal_every"}}) {
      s.*field = static_cast<int>(v.integer(name));  // every domain fits an int
    }
    return s;
  }

  // Starts the far end (the acceltune binary in its hidden mode, with its end of a socket pair),
  // measures, and always ends it: told to quit, then killed and reaped if it has not gone within
  // two seconds. An error carries what the far end wrote to its error stream.
  Status run(const Settings& s, uint64_t bytes, const MeasureSettings& settings, Measurement& m) {
    const bool ping_pong = verbs::is_ping_pong(verb_, latency_);
    // Started, not forked: verbs resources do not survive a fork, a fork of a process with
    // threads may inherit a lock held by another, and each end needs its own context, as two
    // hosts would have.
    ACCELTUNE_TRY_ASSIGN(const std::string exe, acceltune_binary());
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return runtime_error("socketpair: {}", std::strerror(errno));
    }
    verbs::FarEndRequest req;
    req.fd = kFarEndFd;
    req.device = device_name_;
    req.port = port_;
    req.gid_index = gid_index_;
    req.settings = s;
    req.bytes = bytes;
    req.verb = verb_;
    req.ping_pong = ping_pong;
    // Its environment is this one's, with the process guard's mark (tuner/process_guard.hpp).
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    ChildOptions options;
    options.pass_fds = {{sv[1], kFarEndFd}};
    auto child = Child::start({exe, "__verbs-far-end", verbs::far_end_request_text(req)}, env, options);
    ::close(sv[1]);
    if (!child) {
      ::close(sv[0]);
      return runtime_error("cannot start the verbs far end: {}", child.error().message);
    }
    const int fd = sv[0];
    Status st = exchange_and_measure(fd, s, bytes, ping_pong, settings, m);
    const int32_t quit = kCmdQuit;
    (void)send_all(fd, &quit, sizeof quit);
    ::close(fd);
    const Child::Result ended = (*child)->finish(Child::Clock::now() + std::chrono::seconds(2));
    if (!st.ok()) {
      std::string said = ended.err;
      while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
      if (!said.empty()) return runtime_error("{} ({})", st.error().message, said);
    }
    return st;
  }

  Status exchange_and_measure(int fd, const Settings& s, uint64_t bytes, bool ping_pong,
                              const MeasureSettings& settings, Measurement& m) {
    End end;
    ACCELTUNE_TRY(end.open(device_name_, port_, gid_index_, s, bytes, verb_ != Verb::read, ping_pong));
    ACCELTUNE_TRY(far_status(fd));
    EndInfo far{};
    ACCELTUNE_TRY(recv_all(fd, &far, sizeof far, kStepTimeoutSeconds));
    const EndInfo mine = end.info();
    ACCELTUNE_TRY(send_all(fd, &mine, sizeof mine));
    ACCELTUNE_TRY(end.connect(far, s.mtu));
    // A send ping-pong's answer needs a receive posted here before the first message goes.
    if (ping_pong && verb_ == Verb::send) ACCELTUNE_TRY(end.post_recv(0, bytes));
    ACCELTUNE_TRY(far_status(fd));

    const bool inl = verb_ != Verb::read && bytes <= static_cast<uint64_t>(s.inline_bytes);
    if (ping_pong) m = measure_external(bytes, PingPong(end, far, verb_, bytes, inl), settings);
    else m = measure_external(bytes, Stream(end, far, s, verb_, bytes, inl), settings);
    if (m.state == State::failed) return runtime_error("{}", m.error);
    ACCELTUNE_TRY_ASSIGN(const bool good, arrived_intact(fd, end, bytes, ping_pong));
    if (!good) {
      m.state = State::invalid;
      m.error = "the data that arrived does not match what was sent";
    }
    if (latency_) {
      const verbs::LatencyFigures f = verbs::latency_figures(verb_, m.median_seconds);
      m.details["latency_us"] = f.latency_us;
      m.details["round_trip_us"] = f.round_trip_us;
      m.details["latency_is"] = f.latency_is;
    }
    m.details["inline"] = inl;
    m.details["path_mtu_bytes"] = s.mtu;
    return {};
  }

  // Whether the data arrived as sent: read here, written or sent there (the far end checks).
  Expected<bool> arrived_intact(int fd, End& end, uint64_t bytes, bool ping_pong) const {
    bool good = true;
    if (verb_ == Verb::read) {
      for (size_t i = 0; i < bytes && good; ++i) good = end.buf()[i] == pattern_byte(i);
      return good;
    }
    // A ping-pong's answers land here too.
    good = !ping_pong || end.arrived_intact(bytes, true);
    const int32_t check = kCmdCheck;
    ACCELTUNE_TRY(send_all(fd, &check, sizeof check));
    int32_t ok = 0;
    ACCELTUNE_TRY(recv_all(fd, &ok, sizeof ok, kStepTimeoutSeconds));
    return good && ok != 0;
  }

  Verb verb_ = Verb::write;
  bool latency_ = false;
  std::string device_, device_name_;
  int port_ = 1, gid_index_ = -1;
  uint64_t max_msg_sz_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("verbs", "RDMA write, read and send over RC queue pairs between two processes (MTU, QPs, depth, inline, signalling)",
                          Verbs)

}  // namespace acceltune
