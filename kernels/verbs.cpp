// verbs: RDMA write, read and send between two processes over RC queue pairs on this host
// (the far end is a forked process with its own device context). Operations write, read, send
// measure bandwidth with many messages in flight; write_lat, read_lat, send_lat time one
// message at a time (the completion of an RC work request needs the far end's ack, so one
// message costs a round trip). Params: path MTU, number of QPs, work requests in flight per
// QP, inline threshold, signalling interval; the message size is the measured size.
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "kernels/timed_external.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

enum class Verb { write, read, send };

constexpr int kMaxQps = 64;
constexpr double kStepTimeoutSeconds = 10.0;

struct Settings {
  int mtu = 4096;
  int qps = 1;
  int outstanding = 16;
  int inline_bytes = 0;
  int signal_every = 1;
};

ibv_mtu mtu_enum(int bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
  }
}
int mtu_bytes(ibv_mtu m) { return 128 << static_cast<int>(m); }

unsigned char pattern_byte(size_t i) { return static_cast<unsigned char>(((i * 2654435761u) >> 7) % 255 + 1); }

// What one end tells the other to connect its queue pairs and reach its memory.
struct EndInfo {
  uint32_t qpn[kMaxQps];
  uint32_t psn;
  uint16_t lid;
  uint8_t gid[16];
  uint64_t addr;
  uint32_t rkey;
  int32_t active_mtu;
};

// Blocking exchange of fixed-size records over the socketpair, with a deadline.
Status send_all(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return runtime_error("the far end went away: {}", std::strerror(errno));
    c += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

Status recv_all(int fd, void* p, size_t n, double timeout_seconds) {
  auto* c = static_cast<char*>(p);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return runtime_error("the far end did not answer within {} seconds", timeout_seconds);
    pollfd pf{fd, POLLIN, 0};
    const int r = ::poll(&pf, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t got = ::recv(fd, c, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return runtime_error("the far end went away");
    c += got;
    n -= static_cast<size_t>(got);
  }
  return {};
}

// One end: device context, protection domain, completion queue, queue pairs, registered buffer.
class End {
 public:
  ~End() {
    for (auto* q : qps_) ibv_destroy_qp(q);
    if (mr_) ibv_dereg_mr(mr_);
    if (cq_) ibv_destroy_cq(cq_);
    if (pd_) ibv_dealloc_pd(pd_);
    if (ctx_) ibv_close_device(ctx_);
    std::free(buf_);
  }

  Status open(const std::string& device, int port, int gid_index, const Settings& s, size_t bytes, bool fill) {
    port_ = static_cast<uint8_t>(port);
    gid_index_ = gid_index;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) {
      if (list) ibv_free_device_list(list);
      return runtime_error("kernel 'verbs' needs an RDMA device; none found");
    }
    ibv_device* dev = nullptr;
    for (int i = 0; i < n; ++i) {
      if (device.empty() || device == ibv_get_device_name(list[i])) {
        dev = list[i];
        break;
      }
    }
    if (dev) ctx_ = ibv_open_device(dev);
    ibv_free_device_list(list);
    if (!dev) return runtime_error("no RDMA device named '{}'", device);
    if (!ctx_) return runtime_error("ibv_open_device: {}", std::strerror(errno));
    ibv_port_attr pa{};
    if (ibv_query_port(ctx_, port_, &pa) != 0) return runtime_error("ibv_query_port {}: {}", port, std::strerror(errno));
    if (pa.state != IBV_PORT_ACTIVE) return runtime_error("RDMA port {} is not active", port);
    lid_ = pa.lid;
    active_mtu_ = pa.active_mtu;
    ibv_device_attr da{};
    if (ibv_query_device(ctx_, &da) != 0) return runtime_error("ibv_query_device: {}", std::strerror(errno));
    max_rd_atomic_ = std::max(1, std::min(da.max_qp_rd_atom, 16));
    if (ibv_query_gid(ctx_, port_, gid_index_, &gid_) != 0) return runtime_error("ibv_query_gid index {}: {}", gid_index_, std::strerror(errno));
    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) return runtime_error("ibv_alloc_pd: {}", std::strerror(errno));
    const int depth = s.qps * (s.outstanding + 1);
    cq_ = ibv_create_cq(ctx_, depth, nullptr, nullptr, 0);
    if (!cq_) return runtime_error("ibv_create_cq of {} entries: {}", depth, std::strerror(errno));
    bytes_ = std::max<size_t>(bytes, 64);
    buf_ = static_cast<unsigned char*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
    if (!buf_) return runtime_error("cannot allocate {} bytes", bytes_);
    for (size_t i = 0; i < bytes_; ++i) buf_[i] = fill ? pattern_byte(i) : 0;
    mr_ = ibv_reg_mr(pd_, buf_, bytes_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!mr_) return runtime_error("ibv_reg_mr of {} bytes: {}", bytes_, std::strerror(errno));
    for (int q = 0; q < s.qps; ++q) {
      ibv_qp_init_attr ia{};
      ia.send_cq = ia.recv_cq = cq_;
      ia.qp_type = IBV_QPT_RC;
      ia.cap.max_send_wr = static_cast<uint32_t>(s.outstanding);
      ia.cap.max_recv_wr = static_cast<uint32_t>(s.outstanding);
      ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
      ia.cap.max_inline_data = static_cast<uint32_t>(s.inline_bytes);
      ia.sq_sig_all = 0;
      ibv_qp* qp = ibv_create_qp(pd_, &ia);
      if (!qp) {
        return runtime_error("ibv_create_qp ({} in flight, {} inline bytes): {}", s.outstanding, s.inline_bytes,
                             std::strerror(errno));
      }
      qps_.push_back(qp);
    }
    psn_ = std::random_device{}() & 0xffffff;
    return {};
  }

  EndInfo info() const {
    EndInfo e{};
    for (size_t q = 0; q < qps_.size(); ++q) e.qpn[q] = qps_[q]->qp_num;
    e.psn = psn_;
    e.lid = lid_;
    std::memcpy(e.gid, gid_.raw, 16);
    e.addr = reinterpret_cast<uint64_t>(buf_);
    e.rkey = mr_->rkey;
    e.active_mtu = mtu_bytes(active_mtu_);
    return e;
  }

  Status connect(const EndInfo& far, int mtu) {
    if (mtu > mtu_bytes(active_mtu_) || mtu > far.active_mtu) {
      return runtime_error("path MTU {} exceeds the port's active MTU {}", mtu, std::min(mtu_bytes(active_mtu_), far.active_mtu));
    }
    for (size_t q = 0; q < qps_.size(); ++q) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_INIT;
      a.pkey_index = 0;
      a.port_num = port_;
      a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
      if (ibv_modify_qp(qps_[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        return runtime_error("QP to INIT: {}", std::strerror(errno));
      }
      a = ibv_qp_attr{};
      a.qp_state = IBV_QPS_RTR;
      a.path_mtu = mtu_enum(mtu);
      a.dest_qp_num = far.qpn[q];
      a.rq_psn = far.psn;
      a.max_dest_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
      a.min_rnr_timer = 1;
      a.ah_attr.port_num = port_;
      a.ah_attr.dlid = far.lid;
      // RoCE has no LIDs: the address is the GID, which needs a global route header.
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, far.gid, 16);
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
      a.ah_attr.grh.hop_limit = 64;
      if (ibv_modify_qp(qps_[q], &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        return runtime_error("QP to RTR (path MTU {}): {}", mtu, std::strerror(errno));
      }
      a = ibv_qp_attr{};
      a.qp_state = IBV_QPS_RTS;
      a.timeout = 14;
      a.retry_cnt = 7;
      a.rnr_retry = 7;  // wait for the far end to post receives, however long
      a.sq_psn = psn_;
      a.max_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
      if (ibv_modify_qp(qps_[q], &a,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        return runtime_error("QP to RTS: {}", std::strerror(errno));
      }
    }
    return {};
  }

  Status post_recv(size_t q, size_t bytes) {
    ibv_sge sge{reinterpret_cast<uint64_t>(buf_), static_cast<uint32_t>(bytes), mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = q;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qps_[q], &wr, &bad) != 0) return runtime_error("ibv_post_recv: {}", std::strerror(errno));
    return {};
  }

  ibv_qp* qp(size_t q) const { return qps_[q]; }
  ibv_cq* cq() const { return cq_; }
  ibv_mr* mr() const { return mr_; }
  unsigned char* buf() const { return buf_; }
  size_t qp_count() const { return qps_.size(); }

 private:
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<ibv_qp*> qps_;
  unsigned char* buf_ = nullptr;
  size_t bytes_ = 0;
  uint8_t port_ = 1;
  int gid_index_ = 0;
  ibv_gid gid_{};
  uint16_t lid_ = 0;
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  int max_rd_atomic_ = 1;
  uint32_t psn_ = 0;
};

// Messages between the two ends after the exchange of EndInfo.
enum Cmd : int32_t { kCmdCheck = 1, kCmdQuit = 2 };

// The far end: connects, keeps receives posted for send, and checks what arrived when asked.
int run_far_end(int fd, const std::string& device, int port, int gid_index, const Settings& s, size_t bytes, Verb verb) {
  End end;
  auto report = [&](const Status& st) {
    int32_t ok = st.ok() ? 1 : 0;
    std::string msg = st.ok() ? "" : st.error().message;
    const auto len = static_cast<int32_t>(msg.size());
    (void)send_all(fd, &ok, sizeof ok);
    (void)send_all(fd, &len, sizeof len);
    (void)send_all(fd, msg.data(), msg.size());
    return st.ok();
  };
  // Reads are served from this end's memory, so it holds the pattern there.
  if (!report(end.open(device, port, gid_index, s, bytes, verb == Verb::read))) return 1;
  const EndInfo mine = end.info();
  if (!send_all(fd, &mine, sizeof mine).ok()) return 1;
  EndInfo far{};
  if (!recv_all(fd, &far, sizeof far, kStepTimeoutSeconds).ok()) return 1;
  Status st = end.connect(far, s.mtu);
  if (st.ok() && verb == Verb::send) {
    for (size_t q = 0; q < end.qp_count() && st.ok(); ++q) {
      for (int k = 0; k < s.outstanding && st.ok(); ++k) st = end.post_recv(q, bytes);
    }
  }
  if (!report(st)) return 1;
  for (;;) {
    if (verb == Verb::send) {
      ibv_wc wc[64];
      const int n = ibv_poll_cq(end.cq(), 64, wc);
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) return 1;
        if (!end.post_recv(wc[i].wr_id, bytes).ok()) return 1;
      }
    }
    pollfd pf{fd, POLLIN, 0};
    const int r = ::poll(&pf, 1, verb == Verb::send ? 0 : 100);
    if (r <= 0) continue;
    int32_t cmd = 0;
    if (!recv_all(fd, &cmd, sizeof cmd, kStepTimeoutSeconds).ok()) return 1;
    if (cmd == kCmdQuit) return 0;
    if (cmd == kCmdCheck) {
      int32_t good = 1;
      if (verb != Verb::read) {
        for (size_t i = 0; i < bytes; ++i) {
          if (end.buf()[i] != pattern_byte(i)) {
            good = 0;
            break;
          }
        }
      }
      if (!send_all(fd, &good, sizeof good).ok()) return 1;
    }
  }
}

class Verbs final : public Kernel {
 public:
  std::vector<std::string> native_params() const override {
    return {"mtu", "qps", "outstanding", "inline_bytes", "signal_every"};
  }
  std::vector<std::string> placements() const override { return {"loopback"}; }

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
    gid_index_ = x.value("gid_index", 0);
    for (const auto& p : space.params()) {
      if (!p.env.empty()) continue;
      for (const auto& v : p.values) {
        if (!is_numeric(v) || std::holds_alternative<bool>(v) || std::holds_alternative<double>(v)) {
          return input_error("{}: param '{}' of verbs takes integers, not '{}'", space.source(), p.name, to_string(v));
        }
        const int64_t n = std::get<int64_t>(v);
        std::string range;
        bool ok = true;
        if (p.name == "mtu") {
          ok = n == 256 || n == 512 || n == 1024 || n == 2048 || n == 4096;
          range = "256, 512, 1024, 2048 or 4096";
        } else if (p.name == "qps") {
          ok = n >= 1 && n <= kMaxQps;
          range = fmt::format("1..{}", kMaxQps);
        } else if (p.name == "outstanding") {
          ok = n >= 1 && n <= 4096;
          range = "1..4096";
        } else if (p.name == "inline_bytes") {
          ok = n >= 0 && n <= 1024;
          range = "0..1024";
        } else if (p.name == "signal_every") {
          ok = n >= 1 && n <= 4096;
          range = "1..4096";
        }
        if (!ok) {
          return input_error("{}: param '{}' value {} is out of range for verbs ({})", space.source(), p.name, n, range);
        }
      }
    }
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list) ibv_free_device_list(list);
    if (!list || n == 0) return runtime_error("kernel 'verbs' needs an RDMA device; none found");
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    Settings s = read(space, config);
    if (latency_) s.outstanding = s.signal_every = 1;
    if (s.signal_every > s.outstanding) {
      m.state = State::invalid;
      m.error = fmt::format("signal_every {} exceeds outstanding {}: completions could never free a slot",
                            s.signal_every, s.outstanding);
      return m;
    }
    if (bytes > (uint64_t{1} << 31)) {
      m.state = State::invalid;
      m.error = "a verbs message is at most 2 GiB";
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
  static Settings read(const Space& space, const Config& c) {
    Settings s;
    for (size_t k = 0; k < space.params().size(); ++k) {
      const Param& p = space.params()[k];
      if (!p.env.empty()) continue;
      const int v = static_cast<int>(to_double(space.value(c, k)));
      if (p.name == "mtu") s.mtu = v;
      else if (p.name == "qps") s.qps = v;
      else if (p.name == "outstanding") s.outstanding = v;
      else if (p.name == "inline_bytes") s.inline_bytes = v;
      else if (p.name == "signal_every") s.signal_every = v;
    }
    return s;
  }

  Status run(const Settings& s, uint64_t bytes, const MeasureSettings& settings, Measurement& m) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return runtime_error("socketpair: {}", std::strerror(errno));
    // The far end is forked before either side opens the device: verbs resources do not
    // survive a fork, and each end needs its own context, as two hosts would have.
    const pid_t pid = ::fork();
    if (pid < 0) return runtime_error("fork: {}", std::strerror(errno));
    if (pid == 0) {
      // Forked without exec, it does not carry the process guard's mark: it dies with its parent.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(sv[0]);
      ::_exit(run_far_end(sv[1], device_, port_, gid_index_, s, bytes, verb_));
    }
    ::close(sv[1]);
    const int fd = sv[0];
    struct Reaper {
      pid_t pid;
      int fd;
      ~Reaper() {
        const int32_t quit = kCmdQuit;
        (void)send_all(fd, &quit, sizeof quit);
        ::close(fd);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        int status = 0;
        while (::waitpid(pid, &status, WNOHANG) == 0) {
          if (std::chrono::steady_clock::now() > until) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }
    } reaper{pid, fd};
    auto far_status = [&]() -> Status {
      int32_t ok = 0, len = 0;
      ACCELTUNE_TRY(recv_all(fd, &ok, sizeof ok, kStepTimeoutSeconds));
      ACCELTUNE_TRY(recv_all(fd, &len, sizeof len, kStepTimeoutSeconds));
      std::string msg(static_cast<size_t>(std::max(0, len)), '\0');
      ACCELTUNE_TRY(recv_all(fd, msg.data(), msg.size(), kStepTimeoutSeconds));
      if (!ok) return runtime_error("far end: {}", msg);
      return {};
    };

    End end;
    ACCELTUNE_TRY(end.open(device_, port_, gid_index_, s, bytes, verb_ != Verb::read));
    ACCELTUNE_TRY(far_status());
    EndInfo far{};
    ACCELTUNE_TRY(recv_all(fd, &far, sizeof far, kStepTimeoutSeconds));
    const EndInfo mine = end.info();
    ACCELTUNE_TRY(send_all(fd, &mine, sizeof mine));
    ACCELTUNE_TRY(end.connect(far, s.mtu));
    ACCELTUNE_TRY(far_status());

    const auto qps = end.qp_count();
    const bool inl = verb_ != Verb::read && bytes <= static_cast<uint64_t>(s.inline_bytes);
    std::vector<int> in_flight(qps, 0);        // posted, not yet known complete
    std::vector<int> since_signal(qps, 0);     // unsignalled WRs since the last signalled one
    std::vector<std::vector<int>> batch(qps);  // per signalled WR: how many WRs it completes
    auto post = [&](size_t q, bool force_signal) -> Status {
      ibv_sge sge{reinterpret_cast<uint64_t>(end.buf()), static_cast<uint32_t>(bytes), end.mr()->lkey};
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = verb_ == Verb::write ? IBV_WR_RDMA_WRITE : verb_ == Verb::read ? IBV_WR_RDMA_READ : IBV_WR_SEND;
      if (verb_ != Verb::send) {
        wr.wr.rdma.remote_addr = far.addr;
        wr.wr.rdma.rkey = far.rkey;
      }
      ++since_signal[q];
      const bool signal = force_signal || since_signal[q] >= s.signal_every;
      wr.send_flags = (signal ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u) | (inl ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
      wr.wr_id = q;
      ibv_send_wr* bad = nullptr;
      if (ibv_post_send(end.qp(q), &wr, &bad) != 0) return runtime_error("ibv_post_send: {}", std::strerror(errno));
      ++in_flight[q];
      if (signal) {
        batch[q].push_back(since_signal[q]);
        since_signal[q] = 0;
      }
      return {};
    };
    auto reap = [&](bool block) -> Status {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStepTimeoutSeconds);
      for (;;) {
        ibv_wc wc[64];
        const int n = ibv_poll_cq(end.cq(), 64, wc);
        if (n < 0) return runtime_error("ibv_poll_cq failed");
        for (int i = 0; i < n; ++i) {
          if (wc[i].status != IBV_WC_SUCCESS) return runtime_error("work request failed: {}", ibv_wc_status_str(wc[i].status));
          const size_t q = wc[i].wr_id;
          // A signalled completion stands for itself and the unsignalled ones before it.
          in_flight[q] -= batch[q].front();
          batch[q].erase(batch[q].begin());
        }
        if (n > 0 || !block) return {};
        if (std::chrono::steady_clock::now() > until) return runtime_error("no completion within {} seconds", kStepTimeoutSeconds);
      }
    };
    auto sample = [&](int64_t runs) -> Expected<double> {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < runs; ++i) {
        const size_t q = static_cast<size_t>(i) % qps;
        // A full queue, or every slot held by unsignalled WRs, waits for a completion.
        while (in_flight[q] >= s.outstanding) ACCELTUNE_TRY(reap(true));
        const bool last = i + static_cast<int64_t>(qps) >= runs;  // each QP's last WR of the sample
        ACCELTUNE_TRY(post(q, last || in_flight[q] + 1 >= s.outstanding));
      }
      for (size_t q = 0; q < qps; ++q) {
        while (in_flight[q] > 0) ACCELTUNE_TRY(reap(true));
      }
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    m = measure_external(bytes, sample, settings);
    if (m.state == State::failed) return runtime_error("{}", m.error);

    bool good = true;
    if (verb_ == Verb::read) {
      for (size_t i = 0; i < bytes && good; ++i) good = end.buf()[i] == pattern_byte(i);
    } else {
      const int32_t check = kCmdCheck;
      ACCELTUNE_TRY(send_all(fd, &check, sizeof check));
      int32_t ok = 0;
      ACCELTUNE_TRY(recv_all(fd, &ok, sizeof ok, kStepTimeoutSeconds));
      good = ok != 0;
    }
    if (!good) {
      m.state = State::invalid;
      m.error = "the data that arrived does not match what was sent";
    }
    if (latency_) m.details["latency_us"] = m.median_seconds * 1e6;
    m.details["inline"] = inl;
    m.details["path_mtu_bytes"] = s.mtu;
    return {};
  }

  Verb verb_ = Verb::write;
  bool latency_ = false;
  std::string device_;
  int port_ = 1, gid_index_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("verbs", "RDMA write, read and send over RC queue pairs between two processes (MTU, QPs, depth, inline, signalling)",
                          Verbs)

}  // namespace acceltune
