// The definitions behind tuner/cancel.hpp: cancellation of long commands (search, bench, bring-up).
#include "tuner/cancel.hpp"

#include <signal.h>

#include <atomic>
#include <mutex>

namespace acceltune {
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_cancel_signal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
  // The next one takes the default action: a user who presses Ctrl-C twice means it.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
}

}  // namespace

void install_cancel_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_cancel_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking poll or read returns EINTR and sees the flag
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  });
}

bool cancel_requested() { return g_signal.load(std::memory_order_relaxed) != 0; }
int cancel_signal() { return g_signal.load(std::memory_order_relaxed); }
void request_cancel(int signal) { g_signal.store(signal); }
void clear_cancel() { g_signal.store(0); }

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal " + std::to_string(sig);
  }
}

}  // namespace acceltune
