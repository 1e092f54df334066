// The definitions behind kernels/shared/team.hpp: a fixed team of threads that runs one function on
// every member and waits for all of them; the caller is member 0, so a team of one has no
// synchronisation cost at all.
#include "kernels/shared/team.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace acceltune {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Spin for a while (about 50-100 us), then sleep on the atomic until it changes.
template <typename T, typename Pred>
void await(std::atomic<T>& a, Pred done) {
  for (int i = 0; i < 20000; ++i) {
    if (done(a.load(std::memory_order_acquire))) return;
    cpu_relax();
  }
  for (T v = a.load(std::memory_order_acquire); !done(v); v = a.load(std::memory_order_acquire)) a.wait(v);
}

}  // namespace

Team::Team(int size) : size_(size < 1 ? 1 : size) {
  for (int i = 1; i < size_; ++i) threads_.emplace_back([this, i] { member(i); });
}

Team::~Team() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void Team::run(const std::function<void(int)>& fn) {
  if (size_ == 1) {
    fn(0);
    return;
  }
  fn_ = &fn;
  running_.store(size_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes fn_ and running_
  generation_.notify_all();
  fn(0);
  await(running_, [](int n) { return n == 0; });
  fn_ = nullptr;
}

void Team::member(int id) {
  uint64_t seen = 0;
  while (true) {
    await(generation_, [seen](uint64_t g) { return g != seen; });
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    (*fn_)(id);
    if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) running_.notify_one();
  }
}

}  // namespace acceltune
