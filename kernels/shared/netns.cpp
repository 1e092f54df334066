// The definitions behind kernels/shared/netns.hpp: network namespaces for transfer kernels.
#include "kernels/shared/netns.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

extern char** environ;

namespace acceltune {
namespace {

namespace fs = std::filesystem;
constexpr const char* kNetnsDir = "/run/netns";


std::string quote_argv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// The thread's own socket for interface ioctls, in the namespace it runs in.
Status link_ioctl(const std::string& link, unsigned long request, int* mtu) {
  if (link.size() >= IFNAMSIZ) return input_error("'{}' is not a network interface name (too long)", link);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return runtime_error("socket: {}", std::strerror(errno));
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, link.c_str(), link.size());
  ifr.ifr_mtu = *mtu;
  const int rc = ::ioctl(fd, request, &ifr);
  const int e = errno;
  ::close(fd);
  if (rc != 0) {
    if (e == ENODEV) return runtime_error("there is no network interface '{}'", link);
    if (e == EPERM || e == EACCES) {
      return runtime_error("changing the MTU of '{}' needs root (CAP_NET_ADMIN)", link);
    }
    if (e == EINVAL) return runtime_error("interface '{}' does not take MTU {} (outside its range)", link, *mtu);
    return runtime_error("interface '{}': {}", link, std::strerror(e));
  }
  *mtu = ifr.ifr_mtu;
  return {};
}

bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

}  // namespace

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      const size_t colon = p.find(':', start);
      dirs.push_back(p.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  for (const char* d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.emplace_back(d);
  for (const auto& d : dirs) {
    if (d.empty()) continue;
    const std::string full = d + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

Status enter_netns(const std::string& name) {
  const std::string path = std::string(kNetnsDir) + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return runtime_error("network namespace '{}' does not exist", name);
    return runtime_error("cannot open network namespace '{}': {}", name, std::strerror(errno));
  }
  const int rc = ::setns(fd, CLONE_NEWNET);
  const int e = errno;
  ::close(fd);
  if (rc != 0) {
    if (e == EPERM) return runtime_error("joining network namespace '{}' needs root (CAP_SYS_ADMIN)", name);
    return runtime_error("cannot join network namespace '{}': {}", name, std::strerror(e));
  }
  return {};
}

Status run_in_netns(const std::string& name, const std::function<void()>& fn) {
  if (name.empty()) {
    fn();
    return {};
  }
  Status st;
  std::thread t([&] {
    st = enter_netns(name);
    if (st) fn();
  });
  t.join();
  return st;
}

Expected<std::string> run_command(const std::vector<std::string>& argv, double timeout_seconds) {
  if (argv.empty()) return runtime_error("run_command: no command");
  const std::string prog = find_program(argv[0]);
  if (prog.empty()) {
    return runtime_error("'{}' is not installed (needed for: {}); install iproute2", argv[0], quote_argv(argv));
  }
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return runtime_error("pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  std::vector<std::string> args = argv;
  args[0] = prog;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, prog.c_str(), &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return runtime_error("cannot run '{}': {}", prog, std::strerror(rc));
  }
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  bool timed_out = false;
  while (true) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(out[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buf, static_cast<size_t>(got));
  }
  ::close(out[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return runtime_error("'{}' did not finish within {:.0f} s", quote_argv(argv), timeout_seconds);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return runtime_error("'{}' failed: {}", quote_argv(argv), trim(text).empty() ? "no output" : trim(text));
  }
  return text;
}

Expected<int> get_link_mtu(const std::string& netns, const std::string& link) {
  int mtu = 0;
  Status st;
  Status in = run_in_netns(netns, [&] { st = link_ioctl(link, SIOCGIFMTU, &mtu); });
  if (!in) return in.error();
  if (!st) return st.error();
  return mtu;
}

Status set_link_mtu(const std::string& netns, const std::string& link, int mtu) {
  int m = mtu;
  Status st;
  Status in = run_in_netns(netns, [&] { st = link_ioctl(link, SIOCSIFMTU, &m); });
  if (!in) return in;
  return st;
}

bool may_manage_netns() {
  if (::geteuid() == 0) return true;
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("CapEff:", 0) == 0) {
      const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
      const unsigned long long need = (1ull << 12) | (1ull << 21);  // CAP_NET_ADMIN, CAP_SYS_ADMIN
      return (caps & need) == need;
    }
  }
  return false;
}

std::string NetnsPairInfo::to_text() const {
  return fmt::format("{},{},{},{},{},{}", server, client, server_link, client_link, server_addr, client_addr);
}

Expected<NetnsPairInfo> NetnsPairInfo::from_text(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() != 6) {
    return input_error("'{}' is not SERVER_NS,CLIENT_NS,SERVER_LINK,CLIENT_LINK,SERVER_ADDR,CLIENT_ADDR", text);
  }
  for (const auto& p : parts) {
    if (p.empty()) return input_error("'{}' has an empty field", text);
  }
  return NetnsPairInfo{parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]};
}

std::vector<std::string> list_netns() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kNetnsDir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> netns_names_of(pid_t pid) {
  return {fmt::format("at-{}-a", pid), fmt::format("at-{}-b", pid)};
}

std::vector<std::string> sweep_stale_netns() {
  static const std::regex name_re("at-([0-9]+)-.+");
  std::vector<std::string> removed;
  for (const auto& name : list_netns()) {
    std::smatch m;
    if (!std::regex_match(name, m, name_re)) continue;
    const long pid = std::stol(m[1].str());
    if (pid <= 0 || pid == ::getpid() || pid_alive(static_cast<pid_t>(pid))) continue;
    if (run_command({"ip", "netns", "del", name})) removed.push_back(name);
  }
  return removed;
}

Expected<std::unique_ptr<NetnsPair>> NetnsPair::create() {
  if (!may_manage_netns()) {
    return runtime_error("--netns needs root: creating network namespaces takes CAP_SYS_ADMIN and CAP_NET_ADMIN "
                         "(run as root, or drop --netns to measure over loopback)");
  }
  if (find_program("ip").empty()) {
    return runtime_error("--netns needs the 'ip' command of iproute2, which is not installed");
  }
  sweep_stale_netns();
  std::unique_ptr<NetnsPair> pair(new NetnsPair());
  const auto names = netns_names_of(::getpid());
  pair->info_ = NetnsPairInfo{names[0], names[1], "veth-a", "veth-b", "198.18.0.1", "198.18.0.2"};
  const NetnsPairInfo& in = pair->info_;
  // Leftovers of an earlier pair of this process (a crash inside it) go first.
  for (const auto& n : names) {
    std::error_code ec;
    if (fs::exists(fs::path(kNetnsDir) / n, ec)) (void)run_command({"ip", "netns", "del", n});
  }

  // The guardian first, so that even a crash during the set-up leaves nothing behind. It is a
  // shell in a process group of its own that ignores the terminal's signals, and it removes
  // the namespaces when our end of its pipe closes: on our exit, crash or SIGKILL.
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return runtime_error("pipe: {}", std::strerror(errno));
  const std::string ip = find_program("ip");
  const std::string script =
      "trap '' INT TERM HUP QUIT PIPE; cat >/dev/null; \"$1\" netns del \"$2\"; \"$1\" netns del \"$3\"; exit 0";
  std::vector<std::string> args = {"/bin/sh", "-c", script, "acceltune-netns-guardian", ip, in.server, in.client};
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[0], 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &fa, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(p[0]);
  if (rc != 0) {
    ::close(p[1]);
    return runtime_error("cannot start the namespace guardian (/bin/sh): {}", std::strerror(rc));
  }
  pair->guardian_fd_ = p[1];
  pair->guardian_pid_ = pid;

  const std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", in.server},
      {"ip", "netns", "add", in.client},
      {"ip", "link", "add", in.server_link, "netns", in.server, "type", "veth", "peer", "name", in.client_link, "netns",
       in.client},
      {"ip", "-n", in.server, "addr", "add", in.server_addr + "/24", "dev", in.server_link},
      {"ip", "-n", in.client, "addr", "add", in.client_addr + "/24", "dev", in.client_link},
      {"ip", "-n", in.server, "link", "set", "dev", in.server_link, "mtu", "1500", "up"},
      {"ip", "-n", in.client, "link", "set", "dev", in.client_link, "mtu", "1500", "up"},
      {"ip", "-n", in.server, "link", "set", "dev", "lo", "up"},
      {"ip", "-n", in.client, "link", "set", "dev", "lo", "up"},
  };
  for (const auto& s : steps) {
    auto r = run_command(s);
    if (!r) return runtime_error("setting up the --netns namespaces failed: {}", r.error().message);
  }
  return pair;
}

NetnsPair::~NetnsPair() {
  for (const auto& n : {info_.server, info_.client}) {
    std::error_code ec;
    if (!n.empty() && fs::exists(fs::path(kNetnsDir) / n, ec)) (void)run_command({"ip", "netns", "del", n});
  }
  if (guardian_fd_ >= 0) ::close(guardian_fd_);
  if (guardian_pid_ > 0) {
    // The guardian finds nothing left to remove and exits at once.
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      const pid_t r = ::waitpid(guardian_pid_, &status, WNOHANG);
      if (r == guardian_pid_ || (r < 0 && errno != EINTR)) break;
      ::usleep(10000);
    }
  }
}

}  // namespace acceltune
