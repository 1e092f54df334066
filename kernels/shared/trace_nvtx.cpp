// NVTX ranges (header-only NVTX3 of the CUDA toolkit) for the core's trace hooks: trials and
// timed regions show up in Nsight Systems under the "acceltune" domain. Without a profiler
// attached, NVTX calls return at once.
#include <nvtx3/nvToolsExt.h>

#include "tuner/trace.hpp"

namespace acceltune {
namespace {

nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("acceltune");
  return d;
}

void push(const char* name) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  nvtxDomainRangePushEx(domain(), &a);
}

void pop() { nvtxDomainRangePop(domain()); }

[[maybe_unused]] const bool installed = install_trace_hooks(TraceHooks{push, pop});

}  // namespace
}  // namespace acceltune
