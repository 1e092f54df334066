// host-copy: copies between two host buffers. Params: threads, chunk (each thread copies its
// contiguous share in pieces of this size), method (memcpy, non-temporal streaming stores,
// rep movsb), source and destination offsets from page alignment, which threads first touch
// the buffers, and transparent huge pages.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "kernels/shared/pattern.hpp"
#include "kernels/shared/team.hpp"
#include "probe/stream_copy.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

enum class Method { memcpy_, stream, rep_movsb };

void copy_memcpy(char* dst, const char* src, size_t n) { std::memcpy(dst, src, n); }

#if defined(__x86_64__)
// Non-temporal stores (probe/stream_copy.hpp), shared with the probe's memory reference.
void copy_stream(char* dst, const char* src, size_t n) { copy_streaming(dst, src, n); }

void copy_rep_movsb(char* dst, const char* src, size_t n) {
  asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
#endif

struct Buffer {
  char* base = nullptr;  // mmap'ed region
  size_t length = 0;
  char* data = nullptr;  // aligned start inside it

  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (base) ::munmap(base, length);
  }
};

constexpr size_t kHugePage = 2u << 20;

std::unique_ptr<Buffer> map_buffer(size_t bytes, bool huge) {
  auto b = std::make_unique<Buffer>();
  b->length = bytes + kHugePage;
  void* p = ::mmap(nullptr, b->length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes failed: {}", b->length, std::strerror(errno)));
  b->base = static_cast<char*>(p);
  // Aligned to a huge page either way, so the offsets params are offsets from a known alignment.
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  b->data = reinterpret_cast<char*>(a);
  // Explicit either way, so the param means the same whatever the system's THP default is.
  ::madvise(b->base, b->length, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return b;
}

// The slice of [0, bytes) that member t of a team of n copies: contiguous, cache-line sized.
std::pair<size_t, size_t> slab(size_t bytes, int t, int n) {
  const size_t share = bytes / static_cast<size_t>(n) / 64 * 64;
  const size_t begin = share * static_cast<size_t>(t);
  const size_t end = t == n - 1 ? bytes : begin + share;
  return {begin, end};
}

class HostCopy final : public Kernel {
 public:
  const NativeTable& native_table() const override {
    static const NativeTable table = {
        integer_param("threads", 1, 1024, 1, "threads",
                      "threads that copy, the caller included, each its contiguous share"),
        integer_param("chunk", 64, int64_t{1} << 40, int64_t{1} << 40, "bytes",
                      "each thread copies its share in pieces of this size (the default: one piece)"),
        choice_param("method", {"memcpy", "stream", "rep_movsb"}, "memcpy",
                     "libc memcpy, non-temporal streaming stores, or the rep movsb instruction (x86-64)"),
        integer_param("src_offset", 0, 1 << 20, 0, "bytes", "source start past a 2 MiB boundary"),
        integer_param("dst_offset", 0, 1 << 20, 0, "bytes",
                      "destination start past a 2 MiB boundary (4K aliasing with the source at 0)"),
        choice_param("touch", {"main", "workers"}, "main",
                     "who first touches the buffers, which places their pages: the caller, or each thread its share"),
        bool_param("hugepages", false, "transparent huge pages (madvise) on both buffers"),
    };
    return table;
  }

  Json link() const override { return Json{{"kind", "host-memory"}}; }

  Status attach(Space& space) override {
#if !defined(__x86_64__)
    for (const auto& p : space.params()) {
      if (p.name != "method" || !p.env.empty()) continue;
      for (const auto& v : p.values) {
        if (to_string(v) != "memcpy") {
          return input_error("{}: method '{}' needs an x86-64 CPU; use memcpy", space.source(), to_string(v));
        }
      }
    }
#else
    (void)space;
#endif
    return {};
  }

  Measurement measure(const Space& space, const Config& config, uint64_t bytes, const MeasureSettings& settings,
                      const MeasureContext&) override {
    const Settings s = read(space, config);
    if (!team_ || team_->size() != s.threads) {
      team_.reset();
      team_ = std::make_unique<Team>(s.threads);
    }
    BufferPair& bufs = buffers(bytes, s);
    char* const src = bufs.src->data + s.src_offset;
    char* const dst = bufs.dst->data + s.dst_offset;
    // The destination is cleared so the check after timing proves this config copied.
    std::memset(dst, 0, bytes);

    void (*copy)(char*, const char*, size_t) = copy_memcpy;
#if defined(__x86_64__)
    if (s.method == Method::stream) copy = copy_stream;
    if (s.method == Method::rep_movsb) copy = copy_rep_movsb;
#endif
    const size_t chunk = s.chunk;
    const int n = s.threads;
    const bool fence = s.method == Method::stream;
    const std::function<void(int)> work = [&](int t) {
      auto [begin, end] = slab(bytes, t, n);
      // Stepped by what was copied, never by the chunk itself: an unchunked copy (the largest
      // size_t) must not wrap the offset around.
      for (size_t off = begin; off < end;) {
        const size_t len = std::min(chunk, end - off);
        copy(dst + off, src + off, len);
        off += len;
      }
#if defined(__x86_64__)
      if (fence) _mm_sfence();  // streaming stores are weakly ordered
#endif
    };
    Measurement m = measure_timed(bytes, [&] { team_->run(work); }, settings);
    if (std::memcmp(dst, src, bytes) != 0) {
      m.state = State::invalid;
      m.error = "the destination does not match the source after the copy";
    }
    return m;
  }

 private:
  struct Settings {
    int threads = 1;
    size_t chunk = 0;
    Method method = Method::memcpy_;
    size_t src_offset = 0, dst_offset = 0;
    bool touch_workers = false;
    bool huge = false;
  };

  Settings read(const Space& space, const Config& c) const {
    const NativeValues v(native_table(), space, c);
    Settings s;
    s.threads = static_cast<int>(v.integer("threads"));
    s.chunk = static_cast<size_t>(v.integer("chunk"));
    s.src_offset = static_cast<size_t>(v.integer("src_offset"));
    s.dst_offset = static_cast<size_t>(v.integer("dst_offset"));
    s.touch_workers = v.choice("touch") == "workers";
    s.huge = v.boolean("hugepages");
    const std::string& m = v.choice("method");
    s.method = m == "stream" ? Method::stream : m == "rep_movsb" ? Method::rep_movsb : Method::memcpy_;
    return s;
  }

  struct BufferPair {
    std::unique_ptr<Buffer> src, dst;
    size_t bytes = 0;
  };

  // Buffers are mapped and first touched before any timing: a first touch costs far more than
  // the copy itself on virtual machines. They are kept for reuse, one pair per size and
  // placement (who touched them, huge pages or not), since placement is fixed at first touch.
  BufferPair& buffers(uint64_t bytes, const Settings& s) {
    const int toucher = s.touch_workers ? s.threads : 0;
    const auto key = std::make_tuple(bytes, toucher, s.huge);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    if (cached_bytes_ + 2 * bytes > kCacheLimit) {
      cache_.clear();
      cached_bytes_ = 0;
    }
    BufferPair pair;
    const size_t len = bytes + kMaxOffset + 64;
    pair.src = map_buffer(len, s.huge);
    pair.dst = map_buffer(len, s.huge);
    pair.bytes = len;
    char* src = pair.src->data;
    char* dst = pair.dst->data;
    // Never all zeros: a pattern that differs between neighbouring bytes and is never 0.
    auto fill = [&](size_t begin, size_t end) {
      fill_pattern(src + begin, begin, end - begin);
      std::memset(dst + begin, 0, end - begin);
    };
    if (s.touch_workers) {
      team_->run([&](int t) {
        auto [begin, end] = slab(len, t, team_->size());
        fill(begin, end);
      });
    } else {
      fill(0, len);
    }
    cached_bytes_ += 2 * len;
    return cache_.emplace(key, std::move(pair)).first->second;
  }

  static constexpr size_t kMaxOffset = 1 << 20;
  static constexpr size_t kCacheLimit = size_t{8} << 30;
  std::unique_ptr<Team> team_;
  std::map<std::tuple<uint64_t, int, bool>, BufferPair> cache_;
  size_t cached_bytes_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_KERNEL("host-copy", "the memory-path check: copies between two host buffers (threads, chunking, store method, alignment, placement)",
                          HostCopy)

}  // namespace acceltune
