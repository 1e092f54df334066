// The UCP wrapper and the control stream of the ucx kernel, used by both of its ends: one
// process's context, worker and endpoint, the requests of a repetition and the waiting for them,
// the JSON lines between initiator and responder, and the operations and data pattern they agree
// on. Declared in ucx_ucp.hpp.
#include "kernels/ucx/ucx_ucp.hpp"

#include "kernels/shared/pattern.hpp"
#include "kernels/shared/socket_channel.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace acceltune::ucx {

Expected<Op> op_from_string(const std::string& s) {
  if (s == "tag_bw") return Op::tag_bw;
  if (s == "tag_lat") return Op::tag_lat;
  if (s == "put_bw") return Op::put_bw;
  if (s == "put_lat") return Op::put_lat;
  return input_error("operation '{}' is not one of tag_bw, tag_lat, put_bw, put_lat", s);
}

bool is_put(Op op) { return op == Op::put_bw || op == Op::put_lat; }
bool is_bw(Op op) { return op == Op::tag_bw || op == Op::put_bw; }

// The pattern starts at the message size, so a buffer another size's transfer left is not it.
void fill_pattern(char* p, size_t n) { acceltune::fill_pattern(p, n, n); }

int64_t find_mismatch(const char* p, size_t n) { return pattern_mismatch(p, n, n); }

std::string to_hex(const void* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  const auto* b = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    out += digits[b[i] >> 4];
    out += digits[b[i] & 15];
  }
  return out;
}

std::string from_hex(const std::string& s) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out(s.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  return out;
}

// The framing is the shared socket channel's; the messages here name the UCX connection.
Status Channel::send(const Json& j) {
  Status st = control_->send(j);
  if (!st) return runtime_error("the UCX control connection failed on send: {}", st.error().message);
  return {};
}

Expected<Json> Channel::recv(double timeout_seconds) {
  auto j = control_->recv(timeout_seconds);
  if (!j) return runtime_error("the UCX control connection: {}", j.error().message);
  if (!j->is_object()) return runtime_error("the UCX control connection sent a malformed line");
  return std::move(*j);
}

bool Channel::hung_up() const {
  pollfd p{control_->fd(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

Expected<Json> expect_reply(Channel& ch, double timeout_seconds) {
  ACCELTUNE_TRY_ASSIGN(Json j, ch.recv(timeout_seconds));
  if (j.contains("error")) return runtime_error("{}", j["error"].get<std::string>());
  return j;
}

Buffer::Buffer(size_t bytes) {
  length = std::max<size_t>(bytes, 64);
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes failed: {}", length, std::strerror(errno)));
  data = static_cast<char*>(p);
  std::memset(data, 0, length);
}

Buffer::~Buffer() {
  if (data) ::munmap(data, length);
}

std::string status_text(ucs_status_t s) { return ucs_status_string(s); }

Ucp::~Ucp() {
  if (ep) {
    // Forced: a flushing close waits for the far end, which may be gone already.
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
      const auto deadline = clock_type::now() + std::chrono::seconds(2);
      while (ucp_request_check_status(req) == UCS_INPROGRESS && clock_type::now() < deadline) {
        ucp_worker_progress(worker);
      }
      ucp_request_free(req);
    }
  }
  if (worker) ucp_worker_destroy(worker);
  if (context) ucp_cleanup(context);
}

std::string tls_hint() {
  const char* tls = std::getenv("UCX_TLS");
  return tls ? fmt::format(" with UCX_TLS={}", tls) : std::string();
}

Expected<std::unique_ptr<Ucp>> open_ucp() {
  auto u = std::make_unique<Ucp>();
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) {
    return runtime_error("UCX rejected its configuration: {}; check the UCX_* values of this config", status_text(s));
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
  s = ucp_init(&params, config, &u->context);
  ucp_config_release(config);
  if (s != UCS_OK) {
    u->context = nullptr;
    return runtime_error("ucp_init failed{}: {}; `ucx_info -d` lists the transports of this host", tls_hint(),
                         status_text(s));
  }
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  s = ucp_worker_create(u->context, &wp, &u->worker);
  if (s != UCS_OK) {
    u->worker = nullptr;
    return runtime_error("ucp_worker_create failed{}: {}; `ucx_info -d` lists the transports of this host", tls_hint(),
                         status_text(s));
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  s = ucp_worker_get_address(u->worker, &addr, &len);
  if (s != UCS_OK) return runtime_error("ucp_worker_get_address failed: {}", status_text(s));
  u->address.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(u->worker, addr);
  return u;
}

Status connect_ep(Ucp& u, const std::string& remote_address) {
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  ep.address = reinterpret_cast<const ucp_address_t*>(remote_address.data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  const ucs_status_t s = ucp_ep_create(u.worker, &ep, &u.ep);
  if (s != UCS_OK) {
    u.ep = nullptr;
    return runtime_error("UCX cannot reach the other process{}: {}; the transports must exist on both ends "
                         "(`ucx_info -d` lists them)", tls_hint(), status_text(s));
  }
  return {};
}

void Requests::add(ucs_status_ptr_t r, const char* what) {
  if (r == nullptr) return;
  if (UCS_PTR_IS_ERR(r)) {
    throw TransferError(fmt::format("{} failed{}: {}", what, tls_hint(), status_text(UCS_PTR_STATUS(r))));
  }
  reqs_.push_back(r);
}

void Requests::wait_all(double timeout_seconds, const Channel* watch) {
  const auto deadline = clock_type::now() + std::chrono::duration<double>(timeout_seconds);
  size_t spins = 0;
  while (!reqs_.empty()) {
    u_.progress();
    for (size_t i = 0; i < reqs_.size();) {
      const ucs_status_t s = ucp_request_check_status(reqs_[i]);
      if (s == UCS_INPROGRESS) {
        ++i;
        continue;
      }
      ucp_request_free(reqs_[i]);
      reqs_[i] = reqs_.back();
      reqs_.pop_back();
      if (s != UCS_OK) throw TransferError(fmt::format("a UCX transfer failed{}: {}", tls_hint(), status_text(s)));
    }
    if (++spins % 4096 == 0) {
      if (clock_type::now() > deadline) {
        throw TransferError(fmt::format("a UCX transfer did not complete within {:.0f} s{}", timeout_seconds,
                                        tls_hint()));
      }
      if (watch && watch->hung_up()) throw TransferError("the initiator closed the control connection");
    }
  }
}

void Requests::release() {
  for (void* r : reqs_) {
    ucp_request_cancel(u_.worker, r);
    ucp_request_free(r);
  }
  reqs_.clear();
}

ucp_request_param_t plain_param() {
  ucp_request_param_t p{};
  return p;
}

ucs_status_ptr_t send_tag(Ucp& u, const void* buf, size_t n, ucp_tag_t tag) {
  ucp_request_param_t p = plain_param();
  return ucp_tag_send_nbx(u.ep, buf, n, tag, &p);
}

ucs_status_ptr_t recv_tag(Ucp& u, void* buf, size_t n, ucp_tag_t tag, ucp_tag_t mask) {
  ucp_request_param_t p = plain_param();
  return ucp_tag_recv_nbx(u.worker, buf, n, tag, mask, &p);
}

}  // namespace acceltune::ucx
