// The far end of the verbs kernel: the acceltune binary started again in the hidden mode
// __verbs-far-end, with its own RDMA end, as a second host would have. It exchanges queue pairs
// and memory with the kernel over their socket pair (send_all and recv_all: the shared socket channel
// with the far end named in errors),
// keeps receives posted, answers each message of a ping-pong, and checks what arrived when asked.
#include "kernels/rdma/verbs_far_end.hpp"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/rdma/verbs_end.hpp"
#include "kernels/rdma/verbs_rules.hpp"
#include "tuner/service.hpp"

namespace acceltune::verbs {

Status send_all(int fd, const void* p, size_t n) { return acceltune::send_all(fd, p, n, "exchange with the far end"); }

Status recv_all(int fd, void* p, size_t n, double timeout_seconds) {
  return acceltune::recv_all(fd, p, n, timeout_seconds, "answer of the far end");
}

namespace {

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

}  // namespace

ACCELTUNE_REGISTER(HiddenMode, "__verbs-far-end",
                   (HiddenMode{"the far end of a verbs measurement (started by the kernel)", far_end_main}));

}  // namespace acceltune::verbs
