// The definitions behind kernels/shared/team.hpp: a fixed team of threads that runs one function on
// every member and waits for all of them; the caller is member 0, so a team of one has no
// synchronisation cost at all.
#include "kernels/shared/team.hpp"

#include <sched.h>

#include <chrono>
#include <thread>
#include <vector>

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

// Spin briefly, then yield the CPU for a while, then sleep on the atomic until it changes. The
// yield matters when the scheduler has put two members on one CPU (on a 2-CPU machine it does, for
// whole runs): a member that only spins holds the CPU the other needs to finish, and every
// hand-over then costs the spin's full length (a 64 KiB copy on 2 threads measured 0.1 GB/s
// instead of 50). A yield hands the CPU to the waiting member at once; on an idle CPU it returns
// at once and costs little more than a pause.
// Returns whether it slept.
template <typename T, typename Pred>
bool await(std::atomic<T>& a, Pred done) {
  for (int i = 0; i < 256; ++i) {
    if (done(a.load(std::memory_order_acquire))) return false;
    cpu_relax();
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
  while (std::chrono::steady_clock::now() < until) {
    if (done(a.load(std::memory_order_acquire))) return false;
    std::this_thread::yield();
  }
  for (T v = a.load(std::memory_order_acquire); !done(v); v = a.load(std::memory_order_acquire)) a.wait(v);
  return true;
}

int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

}  // namespace

Team::Team(int size) : size_(size < 1 ? 1 : size) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (size_ > 1 && sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) cpus_.push_back(c);
    }
  }
#endif
  caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
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
  caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
  running_.store(size_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes fn_ and running_
  generation_.notify_all();
  fn(0);
  await(running_, [](int n) { return n == 0; });
  fn_ = nullptr;
}

void Team::member(int id) {
  uint64_t seen = 0;
  move_apart(id);
  while (true) {
    if (await(generation_, [seen](uint64_t g) { return g != seen; })) move_apart(id);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    (*fn_)(id);
    if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) running_.notify_one();
  }
}

// A member's CPU is the id-th allowed CPU after the caller's. It is moved there by a brief
// affinity of that one CPU, then widened back to the whole set: a nudge, not a pin, and the
// scheduler may move it later. Left alone, a new thread starts on its creator's CPU, and a member
// woken from sleep is placed beside its waker; on a 2-CPU virtual machine the two then shared one
// CPU for thousands of runs, so a two-thread copy measured one thread taking turns (a 64 KiB copy
// at 0.1 GB/s instead of 50 before the yield above, 5 GB/s with it). Only at the start and after a
// sleep, which already cost more than the two system calls.
void Team::move_apart(int id) {
#if defined(__linux__)
  if (cpus_.size() < 2) return;
  const int caller = caller_cpu_.load(std::memory_order_relaxed);
  size_t k = 0;
  while (k < cpus_.size() && cpus_[k] != caller) ++k;
  if (k == cpus_.size()) k = 0;
  const int want = cpus_[(k + static_cast<size_t>(id)) % cpus_.size()];
  if (sched_getcpu() == want) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(want, &one);
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c : cpus_) CPU_SET(c, &all);
  if (sched_setaffinity(0, sizeof one, &one) == 0) sched_setaffinity(0, sizeof all, &all);
#else
  (void)id;
#endif
}

}  // namespace acceltune
