// What the two ends of the ucx kernel share: the operations, the data pattern and the JSON
// control stream between them, and the UCP wrapper: one process's context, worker and endpoint,
// and the waiting for its requests. The initiator (the kernel) is in ucx.cpp, the responder in
// ucx_responder.cpp; these are defined in ucx_ucp.cpp.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/expected.hpp"
#include "tuner/value.hpp"

namespace acceltune::ucx {

using clock_type = std::chrono::steady_clock;

// Every wait of one repetition or one control reply ends after this long, well below the
// runner's trial watchdog (10 s and more), so a stuck transport is a failed trial with a reason
// rather than a killed worker.
constexpr double kStallSeconds = 5.0;
// The responder waits passively while the initiator times a whole measurement (puts, which it
// only progresses) or sits between measurements; it still leaves when the control stream closes.
constexpr double kPassiveSeconds = 600.0;
constexpr double kIdleSeconds = 24 * 3600.0;

constexpr ucp_tag_t kTagData = 1, kTagAck = 2, kTagEnd = 3, kTagPong = 4;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

enum class Op { tag_bw, tag_lat, put_bw, put_lat };

Expected<Op> op_from_string(const std::string& s);
bool is_put(Op op);
bool is_bw(Op op);

// The pattern a transfer's sender fills its buffer with (kernels/shared/pattern.hpp, from offset n on).
void fill_pattern(char* p, size_t n);

// The first byte that differs from the pattern, or -1.
int64_t find_mismatch(const char* p, size_t n);

std::string to_hex(const void* data, size_t n);
std::string from_hex(const std::string& s);

// The control session's messages (kernels/shared/control_auth.hpp), with a deadline on every
// read and errors that name the UCX connection.
class Channel {
 public:
  explicit Channel(ControlChannel& control) : control_(&control) {}

  Status send(const Json& j);
  Expected<Json> recv(double timeout_seconds);

  // True once the far end has closed or reset the stream.
  bool hung_up() const;

  int fd() const { return control_->fd(); }

 private:
  ControlChannel* control_;
};

// A reply that carries an error from the far end becomes that error.
Expected<Json> expect_reply(Channel& ch, double timeout_seconds);

// Page-aligned, first touched on allocation so no page fault lands in the timed region.
struct Buffer {
  char* data = nullptr;
  size_t length = 0;
  Buffer() = default;
  explicit Buffer(size_t bytes);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
};

// A failure inside the timed region: ends measure_timed, becomes a failed measurement.
struct TransferError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string status_text(ucs_status_t s);

// One process's UCP objects.
struct Ucp {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  std::string address;  // this worker's address, to send to the other end

  Ucp() = default;
  Ucp(const Ucp&) = delete;
  Ucp& operator=(const Ucp&) = delete;
  ~Ucp();

  void progress() { ucp_worker_progress(worker); }
};

std::string tls_hint();
Expected<std::unique_ptr<Ucp>> open_ucp();
Status connect_ep(Ucp& u, const std::string& remote_address);

// Waits for every request of a repetition; the requests are freed either way.
class Requests {
 public:
  explicit Requests(Ucp& u) : u_(u) { reqs_.reserve(1100); }
  ~Requests() { release(); }

  // What an nbx call returned: done, an error, or a request to wait for.
  void add(ucs_status_ptr_t r, const char* what);

  // Progresses until all complete; throws on an error or a stall. With `watch`, a closed control
  // connection also ends the wait (the responder outliving its initiator).
  void wait_all(double timeout_seconds, const Channel* watch = nullptr);

  void release();

 private:
  Ucp& u_;
  std::vector<void*> reqs_;
};

ucp_request_param_t plain_param();
ucs_status_ptr_t send_tag(Ucp& u, const void* buf, size_t n, ucp_tag_t tag);
ucs_status_ptr_t recv_tag(Ucp& u, void* buf, size_t n, ucp_tag_t tag, ucp_tag_t mask);

}  // namespace acceltune::ucx
