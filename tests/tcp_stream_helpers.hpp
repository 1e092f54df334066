// What the tcp-stream tests share (test_tcp_stream.cpp over loopback, test_tcp_stream_netns.cpp in
// namespaces): a small space, quick measurements, a spawned acceltune, waiting for a condition.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "kernels/shared/netns.hpp"
#include "kernels/shared/peer.hpp"
#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"

namespace acceltune::tcp_test {

namespace fs = std::filesystem;

inline std::string space_text(const std::string& mtu_values = "[1500]", const std::string& extra = "") {
  return R"({"name": "tcp", "kernel": "tcp-stream", "sizes": ["64K"], )" + extra + R"( "params": [
    {"name": "mtu", "kind": "ordinal", "values": )" + mtu_values + R"(, "default": 1500},
    {"name": "sndbuf", "kind": "ordinal", "values": [0, 1048576], "default": 0},
    {"name": "rcvbuf", "kind": "ordinal", "values": [0, 1048576], "default": 0},
    {"name": "streams", "kind": "ordinal", "values": [1, 3], "default": 1},
    {"name": "write_size", "kind": "pow2", "min": 4096, "max": 262144, "default": 131072},
    {"name": "nodelay", "kind": "bool", "default": false},
    {"name": "zerocopy", "kind": "categorical", "values": ["none", "msg_zerocopy", "sendfile"], "default": "none"},
    {"name": "congestion", "kind": "categorical", "values": ["cubic", "reno"], "default": "cubic"},
    {"name": "align", "kind": "ordinal", "values": [0, 64], "default": 0}]})";
}

inline MeasureSettings quick() { return test::quick_settings(0.001, 0.03, 3); }

inline Config with(const Space& s, const std::vector<std::pair<std::string, std::string>>& sets) {
  return test::config_with(s, sets);
}

inline int mss_of(const Measurement& m) { return m.details.value("mss_bytes", 0); }

// A spawned acceltune with its own pid, for tests that signal it; `prefix` runs it through
// another command that execs it in place (ip netns exec NS).
inline pid_t spawn_acceltune(const std::vector<std::string>& args, const fs::path& cwd,
                      const std::vector<std::string>& prefix = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(127);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::signal(SIGINT, SIG_DFL);  // as a foreground process gets it from a terminal
    std::vector<std::string> a = prefix;
    a.push_back(test::acceltune_binary());
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

inline bool netns_present(const std::string& name) {
  const auto all = list_netns();
  return std::find(all.begin(), all.end(), name) != all.end();
}

template <typename Pred>
bool eventually(Pred p, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return p();
}

// Namespaces at-<pid>-* whose process is gone: what a leak looks like.
inline std::vector<std::string> leaked_netns() {
  static const std::regex re("at-([0-9]+)-.+");
  std::vector<std::string> out;
  for (const auto& n : list_netns()) {
    std::smatch m;
    if (std::regex_match(n, m, re) && ::kill(std::stoi(m[1].str()), 0) != 0 && errno == ESRCH) out.push_back(n);
  }
  return out;
}

}  // namespace acceltune::tcp_test
