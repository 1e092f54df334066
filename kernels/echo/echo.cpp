// echo: the kernel, far end and delivery client of a family used only by tests (built behind
// ACCELTUNE_TEST_SEAMS, hidden from listings). The kernel copies host memory in chunks of
// ACCELTUNE_ECHO_CHUNK bytes, read from the environment the way a library reads its variables, so
// a plan that sets the variable changes what a plain job measures; its objective is MB/s. The far
// end answers a hello with the hello; the delivery client runs the same copy under an arm's
// variables; its own export writes the variable. Nothing outside this folder names it: it proves a
// family plugs in from here alone.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/shared/peer.hpp"
#include "tuner/best.hpp"
#include "tuner/delivery.hpp"
#include "tuner/env_params.hpp"
#include "tuner/family.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

constexpr const char* kChunkVar = "ACCELTUNE_ECHO_CHUNK";

uint64_t chunk_of(const char* text) {
  const uint64_t c = text ? std::strtoull(text, nullptr, 10) : 0;
  return c > 0 ? c : 16;  // the library's own default
}

// MB/s of copying `bytes` in `chunk`-byte calls, the best of a few repetitions; 0 (nothing
// measured) for a chunk larger than the message, which the family's library refuses.
double copy_mbps(uint64_t bytes, uint64_t chunk) {
  if (chunk > bytes) return 0;
  std::vector<char> src(bytes, 'e'), dst(bytes, 0);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t at = 0; at < bytes; at += chunk) std::memcpy(dst.data() + at, src.data() + at, std::min(chunk, bytes - at));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(bytes) / s / 1e6);
  }
  return dst.empty() || dst.back() == 'e' ? best : 0;
}

class Echo final : public Kernel {
 public:
  std::vector<std::string> native_params() const override { return {}; }
  std::string unit() const override { return "MB/s"; }
  Json link() const override { return Json{{"kind", "echo-wire"}}; }
  Measurement measure(const Space&, const Config&, uint64_t bytes, const MeasureSettings&,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    m.value = m.value_p10 = m.value_p90 = copy_mbps(bytes, chunk_of(std::getenv(kChunkVar)));
    m.median_seconds = m.p10_seconds = m.p90_seconds = m.value > 0 ? static_cast<double>(bytes) / m.value / 1e6 : 0;
    if (!(m.value > 0)) {
      m.state = State::invalid;
      m.error = "the copy did not arrive";
    }
    return m;
  }
};

// The plain job of the family: the same copy with the arm's variables as its environment.
class EchoSession final : public DeliverySession {
 public:
  Expected<std::map<uint64_t, double>> measure(const DeliveryArm& arm, const std::vector<uint64_t>& sizes) override {
    const char* chunk = nullptr;
    for (const auto& [var, value] : arm.env) {
      if (var == kChunkVar) chunk = value.c_str();
    }
    std::map<uint64_t, double> out;
    for (uint64_t b : sizes) {
      const double v = copy_mbps(b, chunk_of(chunk));
      if (v > 0) out[b] = v;  // a size the job refused is absent
    }
    return out;
  }
};

// The far end: answers the hello with the hello, marked.
void serve_echo(ControlChannel& ch, const Json& hello, const Json&) {
  Json reply = hello;
  reply["echoed"] = true;
  (void)ch.send(reply);
}

// The family's own export: its variable as the job sets it, for echo studies only.
Expected<std::string> emit_echo_env(const BestTable& best) {
  if (!format_applies("echo-env", best.kernel)) {
    return input_error("the echo-env format exports echo studies; this study's kernel is '{}'", best.kernel);
  }
  const Json chunk = best.export_config.is_object() && best.export_config.contains("chunk") ? best.export_config["chunk"]
                                                                                           : Json(nullptr);
  return export_header(best) + fmt::format("{}={}\n", kChunkVar, chunk.is_null() ? "16" : chunk.dump());
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::EmitterInfo, "echo-env",
                   (::acceltune::EmitterInfo{"the test family's variable (echo studies only)", ::acceltune::emit_echo_env,
                                             {}, {}, {}}))
ACCELTUNE_REGISTER(::acceltune::KernelInfo, "echo",
                   (::acceltune::KernelInfo{"a test family's kernel: copies in chunks an environment variable sets",
                                            false, [] { return std::unique_ptr<::acceltune::Kernel>(new ::acceltune::Echo()); }}))
ACCELTUNE_REGISTER(::acceltune::DeliveryClient, "echo",
                   (::acceltune::DeliveryClient{"the test family's copy with the plan's variables", [](const ::acceltune::Json&) {
                      return ::acceltune::Expected<std::unique_ptr<::acceltune::DeliverySession>>(
                          std::make_unique<::acceltune::EchoSession>());
                    }}))
ACCELTUNE_REGISTER(::acceltune::PeerHandler, "echo",
                   (::acceltune::PeerHandler{"the test family's far end: answers a hello with the hello",
                                             ::acceltune::serve_echo}))
ACCELTUNE_REGISTER_ENV_TABLE("echo", "the echo test family", "ACCELTUNE_ECHO_",
                             (::acceltune::NativeTable{::acceltune::env_integer(
                                 "ACCELTUNE_ECHO_CHUNK", 1, int64_t{1} << 30, "bytes", "16",
                                 "bytes copied per call, read from the environment as a library reads its variables")}))
