// Network namespaces for transfer kernels: a thread joins one (setns) before it opens sockets,
// so the two ends of a transfer can live in two namespaces of one process; and a pair of fresh
// namespaces joined by a veth pair, owned by this process and removed when it ends, also when
// it is killed (a guardian process removes them when the owner's pipe closes).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/value.hpp"

namespace acceltune {

// Joins the calling thread (only it) to the network namespace /run/netns/NAME.
Status enter_netns(const std::string& name);

// Runs fn on a fresh thread that has joined the namespace (this thread when name is empty),
// and waits for it. Sockets keep their namespace, so fds created there work on any thread.
Status run_in_netns(const std::string& name, const std::function<void()>& fn);

// The path of a program: `name` when it has a slash, else the first executable on PATH or in
// /usr/sbin, /sbin, /usr/bin, /bin (where iproute2 puts `ip` for root); "" when none.
std::string find_program(const std::string& name);

// Runs argv (argv[0] found by find_program) and waits at most timeout_seconds; the error names
// the command and quotes its stderr.
Expected<std::string> run_command(const std::vector<std::string>& argv, double timeout_seconds = 10);

// The MTU of a link inside a namespace (empty: this thread's namespace), and setting it
// (SIOCSIFMTU; needs CAP_NET_ADMIN there).
Expected<int> get_link_mtu(const std::string& netns, const std::string& link);
Status set_link_mtu(const std::string& netns, const std::string& link, int mtu);

// Whether this process may create network namespaces (root, or CAP_SYS_ADMIN + CAP_NET_ADMIN).
bool may_manage_netns();

// Two network namespaces joined by a veth pair. `server` has `server_addr` on `server_link`,
// `client` has `client_addr` on `client_link`.
struct NetnsPairInfo {
  std::string server, client;
  std::string server_link, client_link;
  std::string server_addr, client_addr;
  std::string to_text() const;  // "server,client,server_link,client_link,server_addr,client_addr"
  static Expected<NetnsPairInfo> from_text(const std::string& text);
};

class NetnsPair {
 public:
  // Creates at-<pid>-a (server) and at-<pid>-b (client) with a veth pair between them
  // (198.18.0.1/24 and 198.18.0.2/24, links up, MTU 1500), first sweeping stale at-<pid>-*
  // namespaces of dead processes, and starts the guardian that removes them if we die.
  static Expected<std::unique_ptr<NetnsPair>> create();
  ~NetnsPair();  // removes both namespaces (the veth pair goes with them)
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;
  const NetnsPairInfo& info() const { return info_; }

 private:
  NetnsPair() = default;
  NetnsPairInfo info_;
  int guardian_fd_ = -1;  // write end of the guardian's pipe
  pid_t guardian_pid_ = -1;
};

// Removes at-<pid>-* namespaces whose pid is no longer running; returns the names removed.
std::vector<std::string> sweep_stale_netns();

// The namespace names acceltune would create for a process ("at-<pid>-a", "at-<pid>-b").
std::vector<std::string> netns_names_of(pid_t pid);
// Every network namespace name under /run/netns.
std::vector<std::string> list_netns();

}  // namespace acceltune
