// A fixed team of threads that runs one function on every member and waits for all of them;
// the caller is member 0, so a team of one has no synchronisation cost at all. Members spin
// briefly, then yield, before sleeping: a futex wake-up costs tens of microseconds on a virtual
// machine, more than a whole 64 KiB copy, and would hide what a second thread gains; the yield
// keeps two members that share one CPU from waiting out each other's spin.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace acceltune {

class Team {
 public:
  explicit Team(int size);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int size() const { return size_; }
  // Runs fn(0) on the caller and fn(i) on member i, returning when every member has finished.
  void run(const std::function<void(int)>& fn);

 private:
  void member(int id);
  void move_apart(int id);

  int size_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> running_{0};
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<bool> stop_{false};
  std::vector<int> cpus_;             // the CPUs this process may use, when the team was made
  std::atomic<int> caller_cpu_{-1};  // where the caller last ran
  std::vector<std::thread> threads_;
};

}  // namespace acceltune
