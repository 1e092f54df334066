// Control-session benchmarks (Google Benchmark): the cost the authenticated session adds to one
// control message (kernels/shared/control_auth.cpp). One message is a tcp-stream setup request
// of the usual size; "mac" is the HMAC-SHA-256 a sender computes and a receiver recomputes, "send
// and receive" is the whole message across a socketpair, with keys (seq, MAC, verify) and without
// (the plain line of insecure mode), so the difference is what a session pays per message.
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "kernels/shared/control_auth.hpp"

namespace acceltune {
namespace {

const Json kSetup{{"op", "setup"},          {"streams", 4},          {"rcvbuf", 0}, {"congestion", "cubic"},
                  {"write_size", 131072}, {"align", 0}, {"mtu", 9000}};
const std::string kSecret = "a-benchmark-secret-of-some-length";

// Two ends of a socketpair: keyed after a real handshake, or plain.
struct Pair {
  int fds[2] = {-1, -1};
  ControlChannel a, b;
  explicit Pair(bool keyed) {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throw std::runtime_error("socketpair");
    if (!keyed) {
      a = ControlChannel::plain(fds[0]);
      b = ControlChannel::plain(fds[1]);
      return;
    }
    Expected<AcceptedPeer> listener = runtime_error("not run");
    std::thread t([&] { listener = challenge_peer(fds[1], kSecret, "bench", 5); });
    auto connector = answer_challenge(fds[0], kSecret, "bench", Json{{"kind", "bench"}}, 5);
    t.join();
    if (!connector || !listener) throw std::runtime_error("the handshake failed");
    a = std::move(*connector);
    b = std::move(listener->channel);
  }
  ~Pair() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

void BM_ControlMessage(benchmark::State& state) {
  Pair p(state.range(0) != 0);
  for (auto _ : state) {
    if (!p.a.send(kSetup)) state.SkipWithError("send failed");
    auto m = p.b.recv(1);
    if (!m) state.SkipWithError(m.error().message.c_str());
    benchmark::DoNotOptimize(m);
  }
  state.SetLabel(state.range(0) ? "keyed: seq, MAC, verify" : "plain line");
}
BENCHMARK(BM_ControlMessage)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// The MAC alone, computed once by the sender and once by the receiver.
void BM_ControlMacTwice(benchmark::State& state) {
  unsigned char key[32] = {1, 2, 3};
  Json m = kSetup;
  m["seq"] = 12;
  const std::string text = m.dump();
  uint64_t seq = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(control_mac(key, seq, text));
    benchmark::DoNotOptimize(control_mac(key, seq++, text));
  }
  state.SetLabel(std::to_string(text.size()) + "-byte message");
}
BENCHMARK(BM_ControlMacTwice)->Unit(benchmark::kMicrosecond);

// The handshake: both proofs and the key derivation, once per session.
void BM_Handshake(benchmark::State& state) {
  for (auto _ : state) {
    Pair p(true);
    benchmark::DoNotOptimize(p.a.authenticated());
  }
}
BENCHMARK(BM_Handshake)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace acceltune

BENCHMARK_MAIN();
