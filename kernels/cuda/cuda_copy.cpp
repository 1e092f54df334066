// cuda-copy: host-to-device, device-to-host, device-to-device and peer copies, timed by CUDA
// events. Params: host memory kind (pinned, pageable, registered), chunk size, number of
// streams the chunks are spread over, copy engine (cudaMemcpyAsync) or an SM copy kernel
// (threads per block, blocks per SM, vector width), and source/destination offsets.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_copy_sm.hpp"
#include "kernels/shared/pattern.hpp"
#include "kernels/shared/timed_external.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

enum class Op { h2d, d2h, d2d, peer };
enum class HostMemory { pinned, pageable, registered };

std::string cuda_text(cudaError_t e) { return fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e)); }

#define ACCELTUNE_CUDA(expr)                                                                  \
  do {                                                                                        \
    const cudaError_t acceltune_cuda_e = (expr);                                              \
    if (acceltune_cuda_e != cudaSuccess) return runtime_error("{}: {}", #expr, cuda_text(acceltune_cuda_e)); \
  } while (0)

// Every wait on the device polls with a deadline, so a stuck copy becomes a failed measurement.
constexpr double kSyncTimeoutSeconds = 20.0;

Status wait_event(cudaEvent_t ev) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kSyncTimeoutSeconds);
  for (;;) {
    const cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return {};
    if (e != cudaErrorNotReady) return runtime_error("waiting for the copy: {}", cuda_text(e));
    if (std::chrono::steady_clock::now() > until) {
      return runtime_error("the copy did not finish within {} seconds", kSyncTimeoutSeconds);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// The one-line reason this machine cannot run the kernel, or empty.
std::string gpu_missing(int needed) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) return "kernel 'cuda-copy' needs a CUDA GPU; none found";
  if (n < needed) return fmt::format("kernel 'cuda-copy' operation 'peer' needs {} CUDA GPUs; found {}", needed, n);
  return "";
}


struct Memory {
  enum class Where { none, device, pinned, pageable, registered } where = Where::none;
  unsigned char* ptr = nullptr;     // as the host (or cudaMemcpy) addresses it
  unsigned char* device = nullptr;  // as a kernel addresses it; null where kernels cannot
  size_t capacity = 0;
  int ordinal = 0;

  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() { release(); }

  void release() {
    switch (where) {
      case Where::device:
        cudaSetDevice(ordinal);
        cudaFree(ptr);
        break;
      case Where::pinned: cudaFreeHost(ptr); break;
      case Where::registered:
        cudaHostUnregister(ptr);
        std::free(ptr);
        break;
      case Where::pageable: std::free(ptr); break;
      case Where::none: break;
    }
    where = Where::none;
    ptr = device = nullptr;
    capacity = 0;
  }
};

Status allocate_device(Memory& m, size_t bytes, int ordinal) {
  m.release();
  ACCELTUNE_CUDA(cudaSetDevice(ordinal));
  void* p = nullptr;
  ACCELTUNE_CUDA(cudaMalloc(&p, bytes));
  m.where = Memory::Where::device;
  m.ptr = m.device = static_cast<unsigned char*>(p);
  m.capacity = bytes;
  m.ordinal = ordinal;
  return {};
}

Status allocate_host(Memory& m, size_t bytes, HostMemory kind, int ordinal) {
  m.release();
  ACCELTUNE_CUDA(cudaSetDevice(ordinal));
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  if (kind == HostMemory::pinned) {
    void* p = nullptr;
    ACCELTUNE_CUDA(cudaMallocHost(&p, rounded));
    m.where = Memory::Where::pinned;
    m.ptr = static_cast<unsigned char*>(p);
    void* d = nullptr;
    if (cudaHostGetDevicePointer(&d, p, 0) == cudaSuccess) m.device = static_cast<unsigned char*>(d);
    cudaGetLastError();
  } else {
    void* p = std::aligned_alloc(4096, rounded);
    if (!p) return runtime_error("cannot allocate {} bytes of host memory", rounded);
    std::memset(p, 0, rounded);  // first touch outside the timing
    m.ptr = static_cast<unsigned char*>(p);
    if (kind == HostMemory::registered) {
      const cudaError_t e = cudaHostRegister(p, rounded, cudaHostRegisterPortable | cudaHostRegisterMapped);
      if (e != cudaSuccess) {
        std::free(p);
        m.ptr = nullptr;
        return runtime_error("cudaHostRegister of {} bytes: {}", rounded, cuda_text(e));
      }
      m.where = Memory::Where::registered;
      void* d = nullptr;
      if (cudaHostGetDevicePointer(&d, p, 0) == cudaSuccess) m.device = static_cast<unsigned char*>(d);
      cudaGetLastError();
    } else {
      m.where = Memory::Where::pageable;
      int pageable_access = 0;
      cudaDeviceGetAttribute(&pageable_access, cudaDevAttrPageableMemoryAccess, ordinal);
      if (pageable_access) m.device = m.ptr;  // the GPU walks the host page tables (HMM, ATS)
    }
  }
  m.capacity = rounded;
  m.ordinal = ordinal;
  return {};
}

struct Settings {
  HostMemory host = HostMemory::pinned;
  size_t chunk = 0;
  int streams = 1;
  bool sm = false;
  int threads_per_block = 256;
  int blocks_per_sm = 4;
  int vector_bytes = 16;
  size_t src_offset = 0, dst_offset = 0;
};

constexpr size_t kMaxOffset = 1 << 20;

class CudaCopy final : public Kernel {
 public:
  ~CudaCopy() override {
    src_.release();
    dst_.release();
    for (auto* ev : joins_) cudaEventDestroy(ev);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    for (auto* st : streams_) cudaStreamDestroy(st);
  }

  const NativeTable& native_table() const override {
    static const NativeTable table = {
        choice_param("host_memory", {"pinned", "pageable", "registered"}, "pageable",
                     "host buffer of h2d and d2h: malloc'ed pages (what a program has unless it asks), "
                     "cudaMallocHost, or malloc'ed pages registered with cudaHostRegister"),
        integer_param("chunk", 4096, int64_t{1} << 40, int64_t{1} << 40, "bytes",
                      "the copy is issued in pieces of this size (the default: one piece)"),
        integer_param("streams", 1, 64, 1, "streams", "streams the pieces are spread over"),
        choice_param("engine", {"copy", "sm"}, "copy", "copy engine (cudaMemcpyAsync) or an SM copy kernel"),
        [] {
          auto p = integer_param("threads_per_block", 32, 1024, 256, "threads", "SM copy kernel: block size");
          p.multiple_of = 32;
          return p;
        }(),
        integer_param("blocks_per_sm", 1, 64, 4, "blocks", "SM copy kernel: blocks per multiprocessor"),
        [] {
          auto p = integer_param("vector_bytes", 1, 16, 16, "bytes", "SM copy kernel: bytes per load and store");
          p.pow2 = true;
          return p;
        }(),
        integer_param("src_offset", 0, kMaxOffset, 0, "bytes", "source start past the allocation's alignment"),
        integer_param("dst_offset", 0, kMaxOffset, 0, "bytes", "destination start past the allocation's alignment"),
    };
    return table;
  }

  Json link() const override {
    switch (op_) {
      case Op::h2d:
      case Op::d2h: return Json{{"kind", "pcie"}, {"gpu", device_}};
      case Op::d2d: return Json{{"kind", "gpu-memory"}, {"gpu", device_}};
      case Op::peer: return Json{{"kind", "gpu-peer"}, {"gpu", device_}, {"peer_gpu", peer_device_}};
    }
    return nullptr;
  }

  Status attach(Space& space) override {
    const std::string& o = space.operation();
    if (o == "h2d") op_ = Op::h2d;
    else if (o == "d2h") op_ = Op::d2h;
    else if (o == "d2d") op_ = Op::d2d;
    else if (o == "peer") op_ = Op::peer;
    else return input_error("{}: operation '{}' is not one of cuda-copy's (h2d, d2h, d2d, peer)", space.source(), o);
    for (const char* field : {"device", "peer_device"}) {
      if (space.extra().contains(field) && !space.extra()[field].is_number_integer()) {
        return input_error("{}: field '{}' must be a GPU ordinal (an integer)", space.source(), field);
      }
    }
    device_ = space.extra().value("device", 0);
    peer_device_ = space.extra().value("peer_device", 1);
    // Value domains are the table's (checked before attach); what depends on the operation is here.
    for (const auto& p : space.params()) {
      if (p.env.empty() && p.name == "host_memory" && (op_ == Op::d2d || op_ == Op::peer)) {
        return input_error("{}: param 'host_memory' has no meaning for operation '{}'; drop it", space.source(), o);
      }
    }
    const std::string missing = gpu_missing(op_ == Op::peer ? std::max(device_, peer_device_) + 1 : device_ + 1);
    if (!missing.empty()) return runtime_error("{}", missing);
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    const Settings s = read(space, config);
    auto done = run(s, bytes, settings, m);
    if (!done) {
      m.state = State::failed;
      m.error = done.error().message;
    }
    m.bytes = bytes;
    return m;
  }

 private:
  Settings read(const Space& space, const Config& c) const {
    const NativeValues v(native_table(), space, c);
    Settings s;
    const std::string& host = v.choice("host_memory");
    s.host = host == "pageable" ? HostMemory::pageable : host == "registered" ? HostMemory::registered : HostMemory::pinned;
    s.sm = v.choice("engine") == "sm";
    s.chunk = static_cast<size_t>(v.integer("chunk"));
    s.streams = static_cast<int>(v.integer("streams"));
    s.threads_per_block = static_cast<int>(v.integer("threads_per_block"));
    s.blocks_per_sm = static_cast<int>(v.integer("blocks_per_sm"));
    s.vector_bytes = static_cast<int>(v.integer("vector_bytes"));
    s.src_offset = static_cast<size_t>(v.integer("src_offset"));
    s.dst_offset = static_cast<size_t>(v.integer("dst_offset"));
    return s;
  }

  // Buffers are kept between measurements: registering or pinning memory costs far more than a
  // copy. They are replaced when a larger size or another host memory kind is asked for.
  Status prepare(const Settings& s, uint64_t bytes) {
    const size_t need = bytes + kMaxOffset + 64;
    const bool host_src = op_ == Op::h2d, host_dst = op_ == Op::d2h;
    const int dst_device = op_ == Op::peer ? peer_device_ : device_;
    const bool kind_changed = s.host != host_kind_;
    if (src_.capacity < need || (host_src && kind_changed)) {
      if (host_src) ACCELTUNE_TRY(allocate_host(src_, need, s.host, device_));
      else ACCELTUNE_TRY(allocate_device(src_, need, device_));
      // Never all zeros: a pattern that differs between neighbouring bytes and is never 0.
      pattern_.resize(src_.capacity);
      fill_pattern(pattern_.data(), 0, pattern_.size());
      ACCELTUNE_CUDA(cudaMemcpy(src_.ptr, pattern_.data(), pattern_.size(), cudaMemcpyDefault));
    }
    if (dst_.capacity < need || (host_dst && kind_changed)) {
      if (host_dst) ACCELTUNE_TRY(allocate_host(dst_, need, s.host, device_));
      else ACCELTUNE_TRY(allocate_device(dst_, need, dst_device));
    }
    host_kind_ = s.host;
    ACCELTUNE_CUDA(cudaSetDevice(device_));
    if (op_ == Op::peer && !peer_checked_) {
      int can = 0;
      ACCELTUNE_CUDA(cudaDeviceCanAccessPeer(&can, device_, peer_device_));
      if (can) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(peer_device_, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return runtime_error("cudaDeviceEnablePeerAccess: {}", cuda_text(e));
        cudaGetLastError();
      }
      peer_access_ = can != 0;
      peer_checked_ = true;
    }
    while (static_cast<int>(streams_.size()) < s.streams) {
      cudaStream_t st = nullptr;
      ACCELTUNE_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      streams_.push_back(st);
      cudaEvent_t ev = nullptr;
      ACCELTUNE_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      joins_.push_back(ev);
    }
    if (!start_) {
      ACCELTUNE_CUDA(cudaEventCreate(&start_));
      ACCELTUNE_CUDA(cudaEventCreate(&stop_));
    }
    if (sm_count_ == 0) ACCELTUNE_CUDA(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    return {};
  }

  Status run(const Settings& s, uint64_t bytes, const MeasureSettings& settings, Measurement& m) {
    ACCELTUNE_TRY(prepare(s, bytes));
    unsigned char* src = (s.sm ? src_.device : src_.ptr);
    unsigned char* dst = (s.sm ? dst_.device : dst_.ptr);
    if (s.sm && (!src || !dst)) {
      return runtime_error("the SM copy cannot address {} host memory on this GPU; use the copy engine",
                           s.host == HostMemory::pageable ? "pageable" : "this");
    }
    if (s.sm && op_ == Op::peer && !peer_access_) {
      return runtime_error("the SM copy needs peer access between GPUs {} and {}, which they lack", device_, peer_device_);
    }
    src += s.src_offset;
    dst += s.dst_offset;
    // The destination is cleared so the check after timing proves this config copied.
    if (dst_.where == Memory::Where::device) {
      // On the destination's own device, and finished there before the copies start: the copies
      // run on this device's streams, which nothing orders after the peer's memset.
      ACCELTUNE_CUDA(cudaSetDevice(dst_.ordinal));
      ACCELTUNE_CUDA(cudaMemset(dst_.ptr, 0, dst_.capacity));
      ACCELTUNE_CUDA(cudaDeviceSynchronize());
      ACCELTUNE_CUDA(cudaSetDevice(device_));
    } else {
      std::memset(dst_.ptr, 0, dst_.capacity);
    }
    ACCELTUNE_CUDA(cudaDeviceSynchronize());

    const size_t chunk = std::min<size_t>(s.chunk, bytes);
    const int max_blocks = std::max(1, sm_count_ * s.blocks_per_sm);
    const auto nstreams = static_cast<size_t>(s.streams);
    auto enqueue = [&](int64_t runs) -> Status {
      ACCELTUNE_CUDA(cudaEventRecord(start_, streams_[0]));
      for (size_t k = 1; k < nstreams; ++k) ACCELTUNE_CUDA(cudaStreamWaitEvent(streams_[k], start_, 0));
      for (int64_t r = 0; r < runs; ++r) {
        size_t j = 0;
        for (size_t off = 0; off < bytes; off += chunk, ++j) {
          const size_t n = std::min(chunk, bytes - off);
          cudaStream_t st = streams_[j % nstreams];
          if (s.sm) {
            ACCELTUNE_CUDA(sm_copy(dst + off, src + off, n, s.threads_per_block, s.vector_bytes, max_blocks, st));
          } else {
            ACCELTUNE_CUDA(cudaMemcpyAsync(dst + off, src + off, n, cudaMemcpyDefault, st));
          }
        }
      }
      for (size_t k = 1; k < nstreams; ++k) {
        ACCELTUNE_CUDA(cudaEventRecord(joins_[k], streams_[k]));
        ACCELTUNE_CUDA(cudaStreamWaitEvent(streams_[0], joins_[k], 0));
      }
      ACCELTUNE_CUDA(cudaEventRecord(stop_, streams_[0]));
      return wait_event(stop_);
    };
    auto sample = [&](int64_t runs) -> Expected<double> {
      ACCELTUNE_TRY(enqueue(runs));
      float ms = 0;
      ACCELTUNE_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
      return static_cast<double>(ms) * 1e-3;
    };
    m = measure_external(bytes, sample, settings);
    if (m.state != State::ok) return {};

    std::vector<unsigned char> got(bytes);
    ACCELTUNE_CUDA(cudaMemcpy(got.data(), dst_.ptr + s.dst_offset, bytes, cudaMemcpyDefault));
    if (std::memcmp(got.data(), pattern_.data() + s.src_offset, bytes) != 0) {
      m.state = State::invalid;
      m.error = "the destination does not match the source after the copy";
    }
    m.details["engine"] = s.sm ? "sm" : "copy";
    if (s.sm) m.details["vector_bytes"] = sm_copy_vector_bytes(dst, src, s.vector_bytes);
    if (op_ == Op::peer) {
      m.details["peer_access"] = peer_access_;
      // Enabled from the copying GPU only: it addresses the peer's memory, not the reverse.
      m.details["peer_access_is"] =
          peer_access_ ? fmt::format("one way: GPU {} addresses GPU {}'s memory (the reverse is not enabled)", device_,
                                     peer_device_)
                       : fmt::format("none: GPUs {} and {} cannot address each other; the driver stages the copy",
                                     device_, peer_device_);
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device_) == cudaSuccess) m.details["gpu"] = std::string(prop.name);
    return {};
  }

  Op op_ = Op::h2d;
  int device_ = 0, peer_device_ = 1;
  Memory src_, dst_;
  HostMemory host_kind_ = HostMemory::pinned;
  std::vector<unsigned char> pattern_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> joins_;  // one per stream: where stream 0 waits for it (index 0 unused)
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool peer_checked_ = false, peer_access_ = false;
  int sm_count_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("cuda-copy", "copies between host and GPU memory and between GPUs (engine, streams, chunking, memory kind)",
                          CudaCopy)

}  // namespace acceltune
