#include "tests/helpers.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tuner/process_guard.hpp"

#ifndef ACCELTUNE_BINARY
#define ACCELTUNE_BINARY "acceltune"
#endif
#ifndef ACCELTUNE_TEST_SPACES_DIR
#define ACCELTUNE_TEST_SPACES_DIR "spaces"
#endif
#ifndef ACCELTUNE_NCCL_PLUGIN
#define ACCELTUNE_NCCL_PLUGIN "libnccl-tuner-acceltune.so"
#endif
#ifndef ACCELTUNE_BUILD_DIR
#define ACCELTUNE_BUILD_DIR "build"
#endif

namespace acceltune::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = fs::temp_directory_path() / fmt::format("acceltune-test-{}-{}", getpid(), counter++);
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  ASSERT_TRUE(f.good()) << "cannot write " << path;
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Space space_from_text(const std::string& json_text) {
  auto s = Space::from_json(Json::parse(json_text), "test.json", ".");
  if (!s) {
    ADD_FAILURE() << s.error().message;
    return *Space::from_json(Json::parse(R"({"name":"x","kernel":"k","params":[{"name":"a","kind":"bool","default":false}]})"),
                             "fallback", ".");
  }
  return std::move(s).value();
}

Error space_error(const std::string& json_text) {
  auto s = Space::from_json(Json::parse(json_text), "test.json", ".");
  if (s) {
    ADD_FAILURE() << "space loaded but should not have: " << json_text;
    return Error{};
  }
  return s.error();
}

namespace {
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}
}  // namespace

CliResult run_cli(const std::vector<std::string>& args, const fs::path& cwd, const std::string& env_prefix) {
  TempDir io;
  std::string cmd;
  if (!cwd.empty()) cmd += "cd " + quote(cwd.string()) + " && ";
  cmd += env_prefix + " " + quote(acceltune_binary());
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote((io / "out").string()) + " 2>" + quote((io / "err").string()) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(io / "out");
  r.err = read_file(io / "err");
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::vector<std::string> worker_command() { return {acceltune_binary(), "__worker"}; }

pid_t spawn_cli(const std::vector<std::string>& args, const fs::path& cwd, const std::vector<std::string>& env,
                const fs::path& output) {
  std::vector<std::string> argv_s = {acceltune_binary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(125);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 || std::chrono::steady_clock::now() >= end) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string fresh_mark() {
  static std::atomic<int> n{0};
  return fmt::format("ACCELTUNE_TEST_MARK_{}_{}", ::getpid(), n++);
}

namespace {
std::string cmdline_of(pid_t pid) {
  std::string s = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}
}  // namespace

bool wait_for_marked(const std::string& mark, const std::string& what, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  do {
    for (pid_t p : marked_processes(mark)) {
      if (cmdline_of(p).find(what) != std::string::npos) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

std::string files_left(const fs::path& dir, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::string names;
  do {
    names.clear();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) names += e.path().filename().string() + " ";
    if (names.empty()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  return names;
}

std::string left_over(const std::string& mark, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<pid_t> left;
  do {
    left = marked_processes(mark);
    if (left.empty()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  std::string out;
  for (pid_t p : left) out += fmt::format("{} ({}); ", p, cmdline_of(p));
  return out;
}

namespace {
std::string env_or(const char* name, const char* built) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(built);
}
}  // namespace

std::string acceltune_binary() { return env_or("ACCELTUNE_BINARY", ACCELTUNE_BINARY); }

fs::path spaces_dir() {
  const std::string path = env_or("ACCELTUNE_SPACES_PATH", ACCELTUNE_TEST_SPACES_DIR);
  return path.substr(0, path.find(':'));
}

std::string nccl_plugin() { return env_or("ACCELTUNE_NCCL_PLUGIN", ACCELTUNE_NCCL_PLUGIN); }

fs::path build_dir() { return env_or("ACCELTUNE_BUILD_DIR", ACCELTUNE_BUILD_DIR); }

std::string built_path(const char* name, const char* built) { return env_or(name, built); }

MeasureSettings quick_settings(double warmup_seconds, double max_seconds, int min_samples, int max_samples) {
  MeasureSettings s;
  s.warmup_seconds = warmup_seconds;
  s.max_seconds = max_seconds;
  if (min_samples > 0) s.min_samples = min_samples;
  if (max_samples > 0) s.max_samples = max_samples;
  return s;
}

Delivered delivered_gain(double ratio, double ci_low, double ci_high, int rounds) {
  Delivered d;
  d.ratio = ratio;
  d.ci_low = ci_low;
  d.ci_high = ci_high;
  d.rounds = rounds;
  d.faster = ci_low > 1.0;
  d.slower = ci_high < 1.0;
  return d;
}

Config config_with(const Space& s, const std::vector<std::pair<std::string, std::string>>& sets, bool expect_valid) {
  Config c = s.default_config();
  for (const auto& [k, v] : sets) {
    Status st = s.set_value(c, k, v);
    EXPECT_TRUE(st.ok()) << k << "=" << v << ": " << (st.ok() ? "" : st.error().message);
  }
  if (expect_valid) EXPECT_TRUE(s.is_valid(c)) << s.key(c) << ": " << s.why_invalid(c);
  return c;
}

std::optional<Attached> attach_shipped(const std::string& name, std::string& skip,
                                       const std::vector<std::string>& absent_markers,
                                       const std::function<void(Space&)>& edit) {
  auto s = Space::load_file(spaces_dir() / (name + ".json"));
  if (!s) {
    ADD_FAILURE() << s.error().message;
    return std::nullopt;
  }
  if (edit) edit(*s);
  auto k = make_kernel(*s);
  if (!k) {
    const std::string& msg = k.error().message;
    for (const auto& marker : absent_markers) {
      if (msg.find(marker) != std::string::npos) {
        skip = msg;
        return std::nullopt;
      }
    }
    ADD_FAILURE() << msg;
    return std::nullopt;
  }
  return Attached{std::move(*s), std::move(*k)};
}

}  // namespace acceltune::test
