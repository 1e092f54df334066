// Named ranges around trials and timed regions, for profilers. No-op by default: a backend
// (NVTX, where built with CUDA) installs its hooks at load time, so the core needs no profiler
// library. A range costs one branch when no hooks are installed.
#pragma once

#include <string>

namespace acceltune {

struct TraceHooks {
  void (*push)(const char* name) = nullptr;
  void (*pop)() = nullptr;
};

inline TraceHooks& trace_hooks() {
  static TraceHooks hooks;
  return hooks;
}

inline bool install_trace_hooks(TraceHooks hooks) {
  trace_hooks() = hooks;
  return true;
}

inline bool tracing() { return trace_hooks().push != nullptr; }

// Pushes a range for the lifetime of the object. Build the name only when tracing():
//   std::optional<TraceRange> r; if (tracing()) r.emplace(fmt::format(...));
class TraceRange {
 public:
  explicit TraceRange(const std::string& name) {
    const TraceHooks& h = trace_hooks();
    if (h.push && h.pop) {
      h.push(name.c_str());
      active_ = true;
    }
  }
  ~TraceRange() {
    if (active_) trace_hooks().pop();
  }
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;

 private:
  bool active_ = false;
};

}  // namespace acceltune
