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
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

#include "kernels/shared/child_process.hpp"
#include "kernels/shared/timed_external.hpp"
#include "kernels/rdma/verbs_rules.hpp"
#include "tuner/binary.hpp"
#include "tuner/kernel.hpp"
#include "tuner/service.hpp"

extern char** environ;

namespace acceltune {
namespace {

using verbs::Settings;
using verbs::Verb;

constexpr double kStepTimeoutSeconds = 10.0;
// The descriptor number of the far end's socket in the far end.
constexpr int kFarEndFd = 3;

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

// The memory that a ping-pong's incoming writes fill, read while the device writes it.
unsigned char load_byte(const unsigned char* p) {
  const unsigned char b = *static_cast<const volatile unsigned char*>(p);
  std::atomic_thread_fence(std::memory_order_acquire);
  return b;
}

// What one end tells the other to connect its queue pairs and reach its memory.
struct EndInfo {
  uint32_t qpn[verbs::kMaxQps];
  uint32_t psn;
  uint16_t lid;
  uint8_t gid[16];
  uint64_t addr;  // where the far end's writes and reads go
  uint32_t rkey;
  int32_t active_mtu;
  int32_t max_init_rd_atom;  // the device's max_qp_init_rd_atom: reads it may issue per QP
  int32_t max_rd_atom;       // the device's max_qp_rd_atom: reads it may serve per QP
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

// The GID table of a port with each entry's type. The type comes from sysfs, which every
// rdma-core and kernel with RoCE provide (this rdma-core's verbs.h has no ibv_query_gid_type).
std::vector<verbs::GidEntry> gid_table(ibv_context* ctx, uint8_t port, int length, bool ethernet) {
  std::vector<verbs::GidEntry> table;
  for (int i = 0; i < length; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(ctx, port, i, &g) != 0) continue;  // an empty slot, on some versions
    verbs::GidEntry e;
    e.index = i;
    std::memcpy(e.raw.data(), g.raw, 16);
    if (verbs::gid_is_zero(e.raw)) continue;
    std::ifstream f(fmt::format("{}/ports/{}/gid_attrs/types/{}", ctx->device->ibdev_path, port, i));
    std::string text;
    if (f && std::getline(f, text)) e.type = verbs::gid_type_from_sysfs(text, ethernet);
    table.push_back(e);
  }
  return table;
}

// One end: device context, protection domain, completion queue, queue pairs, registered buffer.
// For a ping-pong the buffer has two halves, what this end sends and where the far end's
// messages land, as perftest's latency tests have; otherwise one, for both.
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

  // gid_index -1: the port's default (0 on InfiniBand, a RoCE v2 GID on Ethernet).
  Status open(const std::string& device, int port, int gid_index, const Settings& s, size_t bytes, bool fill,
              bool two_halves) {
    port_ = static_cast<uint8_t>(port);
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
    if (dev) {
      name_ = ibv_get_device_name(dev);
      ctx_ = ibv_open_device(dev);
    }
    ibv_free_device_list(list);
    if (!dev) return runtime_error("no RDMA device named '{}'", device);
    if (!ctx_) return runtime_error("ibv_open_device {}: {}", name_, std::strerror(errno));
    ibv_port_attr pa{};
    if (ibv_query_port(ctx_, port_, &pa) != 0) {
      return runtime_error("ibv_query_port {} port {}: {}", name_, port, std::strerror(errno));
    }
    if (pa.state != IBV_PORT_ACTIVE) return runtime_error("RDMA port {} of {} is not active", port, name_);
    ACCELTUNE_TRY(verbs::check_message_size(bytes, pa.max_msg_sz, name_, port));
    lid_ = pa.lid;
    active_mtu_ = pa.active_mtu;
    ethernet_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    ibv_device_attr da{};
    if (ibv_query_device(ctx_, &da) != 0) return runtime_error("ibv_query_device {}: {}", name_, std::strerror(errno));
    max_init_rd_atom_ = da.max_qp_init_rd_atom;
    max_rd_atom_ = da.max_qp_rd_atom;
    gid_given_ = gid_index >= 0;
    gid_index_ = gid_given_ ? gid_index : 0;
    if (!gid_given_ && ethernet_) {
      const auto table = gid_table(ctx_, port_, pa.gid_tbl_len, true);
      ACCELTUNE_TRY_ASSIGN(gid_index_, verbs::choose_roce_gid(table, name_, port));
    }
    if (ibv_query_gid(ctx_, port_, gid_index_, &gid_) != 0) {
      return runtime_error("ibv_query_gid {} port {} index {}: {}", name_, port, gid_index_, std::strerror(errno));
    }
    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) return runtime_error("ibv_alloc_pd: {}", std::strerror(errno));
    const int depth = s.qps * (2 * s.outstanding + 1);  // sends and receives share it
    cq_ = ibv_create_cq(ctx_, depth, nullptr, nullptr, 0);
    if (!cq_) return runtime_error("ibv_create_cq of {} entries: {}", depth, std::strerror(errno));
    half_ = (std::max<size_t>(bytes, 64) + 63) / 64 * 64;
    bytes_ = two_halves ? 2 * half_ : half_;
    dest_offset_ = two_halves ? half_ : 0;
    buf_ = static_cast<unsigned char*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
    if (!buf_) return runtime_error("cannot allocate {} bytes", bytes_);
    for (size_t i = 0; i < bytes_; ++i) buf_[i] = fill && i < half_ ? pattern_byte(i) : 0;
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
    e.addr = reinterpret_cast<uint64_t>(dest());
    e.rkey = mr_->rkey;
    e.active_mtu = mtu_bytes(active_mtu_);
    e.max_init_rd_atom = max_init_rd_atom_;
    e.max_rd_atom = max_rd_atom_;
    return e;
  }

  Status connect(const EndInfo& far, int mtu) {
    if (mtu > mtu_bytes(active_mtu_) || mtu > far.active_mtu) {
      return runtime_error("path MTU {} exceeds the port's active MTU {}", mtu, std::min(mtu_bytes(active_mtu_), far.active_mtu));
    }
    const verbs::ReadDepths depths =
        verbs::read_depths(max_init_rd_atom_, max_rd_atom_, far.max_init_rd_atom, far.max_rd_atom);
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
      a.max_dest_rd_atomic = static_cast<uint8_t>(depths.responder);
      a.min_rnr_timer = 1;
      a.ah_attr.port_num = port_;
      a.ah_attr.dlid = far.lid;
      // RoCE has no LIDs: the address is the GID, which needs a global route header. On
      // InfiniBand the ends share a subnet and the LID is enough, unless the space names a GID.
      a.ah_attr.is_global = verbs::needs_grh(ethernet_, gid_given_) ? 1 : 0;
      if (a.ah_attr.is_global) {
        std::memcpy(a.ah_attr.grh.dgid.raw, far.gid, 16);
        a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
        a.ah_attr.grh.hop_limit = 64;
      }
      if (ibv_modify_qp(qps_[q], &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        return runtime_error("QP to RTR (path MTU {}, GID index {}): {}", mtu, gid_index_, std::strerror(errno));
      }
      a = ibv_qp_attr{};
      a.qp_state = IBV_QPS_RTS;
      a.timeout = 14;
      a.retry_cnt = 7;
      a.rnr_retry = 7;  // wait for the far end to post receives, however long
      a.sq_psn = psn_;
      a.max_rd_atomic = static_cast<uint8_t>(depths.initiator);
      if (ibv_modify_qp(qps_[q], &a,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        return runtime_error("QP to RTS: {}", std::strerror(errno));
      }
    }
    return {};
  }

  Status post_recv(size_t q, size_t bytes) {
    ibv_sge sge{reinterpret_cast<uint64_t>(dest()), static_cast<uint32_t>(bytes), mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = q;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qps_[q], &wr, &bad) != 0) return runtime_error("ibv_post_recv: {}", std::strerror(errno));
    return {};
  }

  // One signalled write or send of `bytes` from the start of the buffer, the reply of a ping-pong.
  Status post_reply(Verb verb, const EndInfo& far, size_t bytes, bool inl) {
    ibv_sge sge{reinterpret_cast<uint64_t>(buf_), static_cast<uint32_t>(bytes), mr_->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = verb == Verb::write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
    if (verb == Verb::write) {
      wr.wr.rdma.remote_addr = far.addr;
      wr.wr.rdma.rkey = far.rkey;
    }
    wr.send_flags = IBV_SEND_SIGNALED | (inl ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qps_[0], &wr, &bad) != 0) return runtime_error("ibv_post_send: {}", std::strerror(errno));
    return {};
  }

  // Whether what arrived (the first `bytes` where the far end's messages land) is the pattern;
  // a ping-pong's last byte is its tag.
  bool arrived_intact(size_t bytes, bool ping_pong) const {
    const size_t n = ping_pong ? bytes - 1 : bytes;
    for (size_t i = 0; i < n; ++i) {
      if (dest()[i] != pattern_byte(i)) return false;
    }
    return true;
  }

  ibv_qp* qp(size_t q) const { return qps_[q]; }
  ibv_cq* cq() const { return cq_; }
  ibv_mr* mr() const { return mr_; }
  unsigned char* buf() const { return buf_; }
  unsigned char* dest() const { return buf_ + dest_offset_; }
  size_t qp_count() const { return qps_.size(); }

 private:
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<ibv_qp*> qps_;
  std::string name_;
  unsigned char* buf_ = nullptr;
  size_t bytes_ = 0, half_ = 0, dest_offset_ = 0;
  uint8_t port_ = 1;
  bool ethernet_ = false;
  bool gid_given_ = false;
  int gid_index_ = 0;
  ibv_gid gid_{};
  uint16_t lid_ = 0;
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  int max_init_rd_atom_ = 1, max_rd_atom_ = 1;
  uint32_t psn_ = 0;
};

// Messages between the two ends after the exchange of EndInfo.
enum Cmd : int32_t { kCmdCheck = 1, kCmdQuit = 2 };

// The far end: connects, keeps receives posted for send, answers each message of a ping-pong,
// and checks what arrived when asked. Ends when told to or when the socket closes.
int run_far_end(const verbs::FarEndRequest& r) {
  const int fd = r.fd;
  const Settings& s = r.settings;
  const size_t bytes = r.bytes;
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
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "acceltune: verbs far end: %s\n", why.c_str());
    return 1;
  };
  // Reads are served from this end's memory, and a ping-pong answers with it: it holds the pattern.
  const bool fill = r.verb == Verb::read || r.ping_pong;
  if (!report(end.open(r.device, r.port, r.gid_index, s, bytes, fill, r.ping_pong))) return 1;
  const EndInfo mine = end.info();
  if (!send_all(fd, &mine, sizeof mine).ok()) return 1;
  EndInfo far{};
  if (!recv_all(fd, &far, sizeof far, kStepTimeoutSeconds).ok()) return 1;
  Status st = end.connect(far, s.mtu);
  if (st.ok() && r.verb == Verb::send) {
    for (size_t q = 0; q < end.qp_count() && st.ok(); ++q) {
      for (int k = 0; k < s.outstanding && st.ok(); ++k) st = end.post_recv(q, bytes);
    }
  }
  if (!report(st)) return 1;
  const bool inl = bytes <= static_cast<uint64_t>(s.inline_bytes);
  // Sends and ping-pongs are served by spinning; the rest needs this end only for commands.
  const bool spin = r.verb == Verb::send || r.ping_pong;
  unsigned char last_tag = 0;
  int unanswered = 0;
  bool replying = false;
  auto next_look = std::chrono::steady_clock::now();
  for (;;) {
    if (spin) {
      ibv_wc wc[64];
      const int n = ibv_poll_cq(end.cq(), 64, wc);
      if (n < 0) return fail("ibv_poll_cq failed");
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) {
          return fail(fmt::format("work request failed: {}", ibv_wc_status_str(wc[i].status)));
        }
        if (wc[i].opcode & IBV_WC_RECV) {
          if (!end.post_recv(wc[i].wr_id, bytes).ok()) return fail("ibv_post_recv failed");
          if (r.ping_pong) ++unanswered;
        } else {
          replying = false;
        }
      }
      if (r.ping_pong && r.verb == Verb::write) {
        // A new message has a new tag in its last byte, which the device writes last.
        const unsigned char tag = load_byte(end.dest() + bytes - 1);
        if (tag != last_tag) {
          last_tag = tag;
          ++unanswered;
        }
      }
      // One reply in flight at a time: the send queue of a latency op holds one.
      if (unanswered > 0 && !replying) {
        if (r.verb == Verb::write) end.buf()[bytes - 1] = last_tag;
        const Status sent = end.post_reply(r.verb, far, bytes, inl);
        if (!sent.ok()) return fail(sent.error().message);
        replying = true;
        --unanswered;
      }
      // A look at the socket costs a system call: once a millisecond while spinning.
      const auto now = std::chrono::steady_clock::now();
      if (now < next_look) continue;
      next_look = now + std::chrono::milliseconds(1);
    }
    pollfd pf{fd, POLLIN, 0};
    const int n = ::poll(&pf, 1, spin ? 0 : 100);
    if (n <= 0) continue;
    int32_t cmd = 0;
    if (!recv_all(fd, &cmd, sizeof cmd, kStepTimeoutSeconds).ok()) return 0;  // the kernel is gone
    if (cmd == kCmdQuit) return 0;
    if (cmd == kCmdCheck) {
      const int32_t good = r.verb == Verb::read || end.arrived_intact(bytes, r.ping_pong) ? 1 : 0;
      if (!send_all(fd, &good, sizeof good).ok()) return 1;
    }
  }
}

// `acceltune __verbs-far-end REQUEST_JSON`, started by the kernel with its end of the socket
// pair at the descriptor the request names.
int far_end_main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "acceltune: __verbs-far-end takes one argument, the request (JSON) of the verbs kernel\n");
    return 2;
  }
  auto req = verbs::parse_far_end_request(argv[2]);
  if (!req) {
    std::fprintf(stderr, "acceltune: __verbs-far-end: malformed request: %s\n", req.error().message.c_str());
    return 2;
  }
  if (::fcntl(req->fd, F_GETFD) < 0) {
    std::fprintf(stderr, "acceltune: __verbs-far-end: malformed request: descriptor %d is not open\n", req->fd);
    return 2;
  }
  (void)::fcntl(req->fd, F_SETFD, FD_CLOEXEC);
  return run_far_end(*req);
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
    gid_index_ = x.value("gid_index", -1);  // -1: the port's default, chosen when the device opens
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
          ok = n >= 1 && n <= verbs::kMaxQps;
          range = fmt::format("1..{}", verbs::kMaxQps);
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
    ACCELTUNE_TRY(end.open(device_name_, port_, gid_index_, s, bytes, verb_ != Verb::read, ping_pong));
    ACCELTUNE_TRY(far_status());
    EndInfo far{};
    ACCELTUNE_TRY(recv_all(fd, &far, sizeof far, kStepTimeoutSeconds));
    const EndInfo mine = end.info();
    ACCELTUNE_TRY(send_all(fd, &mine, sizeof mine));
    ACCELTUNE_TRY(end.connect(far, s.mtu));
    // A send ping-pong's answer needs a receive posted here before the first message goes.
    if (ping_pong && verb_ == Verb::send) ACCELTUNE_TRY(end.post_recv(0, bytes));
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
    // One iteration of a ping-pong: a message out and the far end's answer back, each tagged in
    // its last byte with a value the previous one did not have.
    unsigned char tag = 0;
    auto ping = [&](int64_t runs) -> Expected<double> {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < runs; ++i) {
        tag = static_cast<unsigned char>(tag % 255 + 1);
        if (verb_ == Verb::write) end.buf()[bytes - 1] = tag;
        ACCELTUNE_TRY(end.post_reply(verb_, far, bytes, inl));
        bool sent = false, answered = false;
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStepTimeoutSeconds);
        for (uint64_t spins = 0; !(sent && answered); ++spins) {
          ibv_wc wc[4];
          const int n = ibv_poll_cq(end.cq(), 4, wc);
          if (n < 0) return runtime_error("ibv_poll_cq failed");
          for (int k = 0; k < n; ++k) {
            if (wc[k].status != IBV_WC_SUCCESS) {
              return runtime_error("work request failed: {}", ibv_wc_status_str(wc[k].status));
            }
            if (wc[k].opcode & IBV_WC_RECV) {
              answered = true;
              ACCELTUNE_TRY(end.post_recv(0, bytes));
            } else {
              sent = true;
            }
          }
          if (verb_ == Verb::write && !answered) answered = load_byte(end.dest() + bytes - 1) == tag;
          if (spins % 4096 == 4095 && std::chrono::steady_clock::now() > until) {
            return runtime_error("the far end did not answer message {} of the ping-pong within {} seconds", i + 1,
                                 kStepTimeoutSeconds);
          }
        }
      }
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    if (ping_pong) m = measure_external(bytes, ping, settings);
    else m = measure_external(bytes, sample, settings);
    if (m.state == State::failed) return runtime_error("{}", m.error);

    bool good = true;
    if (verb_ == Verb::read) {
      for (size_t i = 0; i < bytes && good; ++i) good = end.buf()[i] == pattern_byte(i);
    } else {
      // A ping-pong's answers land here too.
      good = !ping_pong || end.arrived_intact(bytes, true);
      const int32_t check = kCmdCheck;
      ACCELTUNE_TRY(send_all(fd, &check, sizeof check));
      int32_t ok = 0;
      ACCELTUNE_TRY(recv_all(fd, &ok, sizeof ok, kStepTimeoutSeconds));
      good = good && ok != 0;
    }
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

  Verb verb_ = Verb::write;
  bool latency_ = false;
  std::string device_, device_name_;
  int port_ = 1, gid_index_ = -1;
  uint64_t max_msg_sz_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("verbs", "RDMA write, read and send over RC queue pairs between two processes (MTU, QPs, depth, inline, signalling)",
                          Verbs)
ACCELTUNE_REGISTER(HiddenMode, "__verbs-far-end",
                   (HiddenMode{"the far end of a verbs measurement (started by the kernel)", far_end_main}));

}  // namespace acceltune
