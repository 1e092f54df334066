// The responder of the ucx kernel: the far side that answers the initiator's transfers. It opens
// its own UCP objects, connects to the initiator's worker, and per command posts the receives of
// the tagged operations (and answers ping-pongs) or registers the buffer that puts land in, then
// checks what arrived against the pattern. It runs in a process forked from the trial's worker,
// or from `acceltune serve` for --peer (ucx_peer.cpp).
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "kernels/ucx/ucx.hpp"
#include "kernels/ucx/ucx_ucp.hpp"

namespace acceltune::ucx {
namespace {

struct Registered {
  Ucp& u;
  ucp_mem_h mem = nullptr;
  explicit Registered(Ucp& ucp) : u(ucp) {}
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;
  ~Registered() {
    if (mem) ucp_mem_unmap(u.context, mem);
  }
};

// Tagged receives into one buffer until the end marker arrives. Returns normally at the marker.
void respond_tag(Ucp& u, Channel& ch, Op op, char* buf, size_t bytes, int window) {
  // Posted receives match any tag, so the end marker completes one of them; it carries no data.
  std::vector<void*> posted;
  std::vector<char> complete;
  posted.reserve(static_cast<size_t>(window));
  complete.reserve(static_cast<size_t>(window));
  Requests sends(u);
  auto post_window = [&] {
    posted.clear();
    complete.assign(static_cast<size_t>(window), 0);
    for (int i = 0; i < window; ++i) {
      ucs_status_ptr_t r = recv_tag(u, buf, bytes, 0, 0);
      if (UCS_PTR_IS_ERR(r)) throw TransferError(fmt::format("ucp_tag_recv_nbx failed: {}", status_text(UCS_PTR_STATUS(r))));
      posted.push_back(r);
    }
  };
  auto cancel_rest = [&] {
    for (size_t i = 0; i < posted.size(); ++i) {
      if (complete[i]) continue;
      ucp_request_cancel(u.worker, posted[i]);
      while (ucp_request_check_status(posted[i]) == UCS_INPROGRESS) u.progress();
      ucp_request_free(posted[i]);
    }
    posted.clear();
  };
  try {
    post_window();
    for (;;) {
      // Waits for this window; an end marker among the completions ends the loop.
      bool ended = false;
      size_t spins = 0, done = 0;
      const auto deadline = clock_type::now() + std::chrono::duration<double>(kPassiveSeconds);
      while (done < posted.size() && !ended) {
        u.progress();
        for (size_t i = 0; i < posted.size(); ++i) {
          if (complete[i]) continue;
          ucp_tag_recv_info_t info{};
          const ucs_status_t s = ucp_tag_recv_request_test(posted[i], &info);
          if (s == UCS_INPROGRESS) continue;
          complete[i] = 1;
          ucp_request_free(posted[i]);
          ++done;
          if (s != UCS_OK) throw TransferError(fmt::format("a UCX receive failed: {}", status_text(s)));
          if (info.sender_tag == kTagEnd) ended = true;
        }
        if (++spins % 4096 == 0) {
          if (clock_type::now() > deadline) throw TransferError("the responder waited too long for data");
          if (ch.hung_up()) throw TransferError("the initiator closed the control connection");
        }
      }
      if (ended) {
        cancel_rest();
        return;
      }
      if (op == Op::tag_bw) {
        // The next window is posted before the acknowledgement, so its data finds receives waiting.
        post_window();
        static const uint64_t ack = 0;
        sends.add(send_tag(u, &ack, sizeof ack, kTagAck), "sending the acknowledgement");
      } else {
        sends.add(send_tag(u, buf, bytes, kTagPong), "sending the reply");
        sends.wait_all(kStallSeconds, &ch);
        post_window();
      }
      sends.wait_all(kStallSeconds, &ch);
    }
  } catch (...) {
    cancel_rest();
    throw;
  }
}

// Puts need no action here beyond progress (emulated RMA runs on the responder's worker); waits
// for the end marker.
void respond_put(Ucp& u, Channel& ch) {
  char marker = 0;
  Requests reqs(u);
  reqs.add(recv_tag(u, &marker, 0, kTagEnd, kFullMask), "posting the end receive");
  reqs.wait_all(kPassiveSeconds, &ch);
}

Status respond_one(Ucp& u, Channel& ch, const Json& cmd) {
  if (!cmd.contains("op") || !cmd.contains("bytes") || !cmd.contains("window")) {
    return runtime_error("the UCX control command lacks op, bytes or window");
  }
  ACCELTUNE_TRY_ASSIGN(Op op, op_from_string(cmd["op"].get<std::string>()));
  const auto bytes = cmd["bytes"].get<uint64_t>();
  const int window = cmd["window"].get<int>();
  Buffer buf(bytes);
  Registered reg(u);
  Json reply = Json::object();
  reply["ok"] = true;
  if (is_put(op)) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = buf.data;
    mp.length = bytes;
    ucs_status_t s = ucp_mem_map(u.context, &mp, &reg.mem);
    if (s != UCS_OK) {
      reg.mem = nullptr;
      return runtime_error("ucp_mem_map of {} bytes failed{}: {}", bytes, tls_hint(), status_text(s));
    }
    void* rkey = nullptr;
    size_t rkey_len = 0;
    s = ucp_rkey_pack(u.context, reg.mem, &rkey, &rkey_len);
    if (s != UCS_OK) return runtime_error("ucp_rkey_pack failed{}: {}", tls_hint(), status_text(s));
    reply["rkey"] = to_hex(rkey, rkey_len);
    ucp_rkey_buffer_release(rkey);
    reply["remote_address"] = reinterpret_cast<uint64_t>(buf.data);
  }
  ACCELTUNE_TRY(ch.send(reply));
  Json result = Json::object();
  try {
    if (is_put(op)) respond_put(u, ch);
    else respond_tag(u, ch, op, buf.data, bytes, op == Op::tag_bw ? window : 1);
    const int64_t bad = find_mismatch(buf.data, bytes);
    result["valid"] = bad < 0;
    if (bad >= 0) result["mismatch_at"] = bad;
  } catch (const TransferError& e) {
    result["error"] = fmt::format("responder: {}", e.what());
  }
  return ch.send(result);
}

}  // namespace

int run_responder(ControlChannel& control) {
  Channel ch(control);
  auto u = open_ucp();
  if (!u) {
    (void)ch.send(Json{{"error", u.error().message}});
    return 1;
  }
  if (!ch.send(Json{{"address", to_hex((*u)->address.data(), (*u)->address.size())}})) return 1;
  auto hello = expect_reply(ch, kStallSeconds * 2);
  if (!hello || !hello->contains("address")) return 1;
  if (Status st = connect_ep(**u, from_hex((*hello)["address"].get<std::string>())); !st) {
    (void)ch.send(Json{{"error", st.error().message}});
    return 1;
  }
  if (!ch.send(Json{{"ok", true}})) return 1;
  for (;;) {
    auto cmd = ch.recv(kIdleSeconds);
    if (!cmd) return 0;  // the initiator went away: the normal end
    const std::string what = cmd->value("cmd", "");
    if (what == "quit") return 0;
    if (what != "run") return 1;
    Status st = [&]() -> Status {
      try {
        return respond_one(**u, ch, *cmd);
      } catch (const std::exception& e) {
        return runtime_error("responder: {}", e.what());
      }
    }();
    if (!st) {
      (void)ch.send(Json{{"error", st.error().message}});
      return 1;
    }
  }
}

}  // namespace acceltune::ucx
