// fault: a kernel that misbehaves on request, to prove the runner's isolation. Param `mode`:
// ok (reports `value`), crash (SIGSEGV), hang (never returns), exit (exits with status 3 and a
// message), nan (reports NaN), slow (sleeps `slow_seconds`, then reports `value`). It runs only
// in worker processes and is left out of listings.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

class Fault final : public Kernel {
 public:
  const NativeTable& native_table() const override {
    static const NativeTable table = {
        choice_param("mode", {"ok", "crash", "hang", "exit", "nan", "slow"}, "ok", "how the measurement misbehaves"),
        number_param("value", -1e300, 1e300, 1.0, "units", "what an ok or slow measurement reports"),
        number_param("slow_seconds", 0, 3600, 0.2, "seconds", "how long a slow measurement sleeps"),
    };
    return table;
  }
  KernelIsolation isolation() const override { return KernelIsolation::worker_only; }
  std::string unit() const override { return "units"; }

  Status attach(Space& space) override {
    auto k = space.param_index("mode");
    if (!k) return input_error("{}: kernel 'fault' needs a categorical param 'mode'", space.source());
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings&,
                      const MeasureContext&) override {
    const NativeValues v(native_table(), space, config);
    const std::string mode = v.choice("mode");
    const double value = v.number("value"), slow = v.number("slow_seconds");
    Measurement m;
    m.bytes = bytes;
    if (mode == "crash") {
      std::fprintf(stderr, "fault: crashing on purpose\n");
      std::fflush(stderr);
      ::raise(SIGSEGV);
    } else if (mode == "hang") {
      std::fprintf(stderr, "fault: hanging on purpose\n");
      std::fflush(stderr);
      for (;;) ::pause();
    } else if (mode == "exit") {
      std::fprintf(stderr, "fault: exiting with status 3 on purpose\n");
      std::fflush(stderr);
      ::_exit(3);
    } else if (mode == "nan") {
      m.value = std::nan("");
      m.state = State::invalid;
      m.error = "the measurement is NaN";
      return m;
    } else if (mode == "slow") {
      std::this_thread::sleep_for(std::chrono::duration<double>(slow));
    }
    m.value = m.value_p10 = m.value_p90 = value;
    m.median_seconds = m.p10_seconds = m.p90_seconds = slow;
    return m;
  }
};

}  // namespace

ACCELTUNE_REGISTER(KernelInfo, "fault",
                   (KernelInfo{"misbehaves on request (tests the runner)", false,
                               [] { return std::unique_ptr<Kernel>(new Fault()); }}))

}  // namespace acceltune
