#include "tests/helpers.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
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

namespace {

Space loaded_or_fallback(Expected<Space> s) {
  if (!s) {
    ADD_FAILURE() << s.error().message;
    return *Space::from_json(Json::parse(R"({"name":"x","kernel":"k","params":[{"name":"a","kind":"bool","default":false}]})"),
                             "fallback", ".");
  }
  return std::move(s).value();
}

}  // namespace

Space space_from_text(const std::string& json_text) {
  return loaded_or_fallback(Space::from_json(Json::parse(json_text), "test.json", "."));
}

Space space_from_definition(const std::string& json_text) {
  return loaded_or_fallback(Space::from_definition(Json::parse(json_text), "test.json", "."));
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

fs::path source_dir() { return env_or("ACCELTUNE_SOURCE_DIR", ACCELTUNE_SOURCE_DIR); }

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
  if (expect_valid) {
    EXPECT_TRUE(s.is_valid(c)) << s.key(c) << ": " << s.why_invalid(c);
  }
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

CliResult run_shell(const std::string& command) {
  TempDir io;
  const std::string out = (io / "out").string(), err = (io / "err").string();
  const int st = std::system((command + " >" + out + " 2>" + err).c_str());
  CliResult r;
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

bool have_program(const std::string& name) { return run_shell("command -v " + name).exit_code == 0; }

bool eventually(const std::function<bool()>& p, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return p();
}

bool closed_by_far_end(int fd, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  char buf[4096];
  while (std::chrono::steady_clock::now() < end) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string check_well_formed(const std::string& html) {
  static const std::set<std::string> void_elements = {"meta", "br", "hr", "img", "input", "link", "wbr"};
  static const std::regex entity("&(amp|lt|gt|quot|#39|mdash|nbsp|#[0-9]+);");
  std::vector<std::string> stack;
  size_t i = 0;
  auto line_of = [&](size_t pos) { return std::to_string(std::count(html.begin(), html.begin() + static_cast<long>(pos), '\n') + 1); };
  while (i < html.size()) {
    const char ch = html[i];
    if (ch == '&') {
      std::smatch m;
      const std::string rest = html.substr(i, 12);
      if (!std::regex_search(rest, m, entity, std::regex_constants::match_continuous)) {
        return "line " + line_of(i) + ": '&' that starts no known entity";
      }
      i += static_cast<size_t>(m.length(0));
      continue;
    }
    if (ch == '>') return "line " + line_of(i) + ": stray '>' in text";
    if (ch != '<') {
      ++i;
      continue;
    }
    if (html.compare(i, 4, "<!--") == 0) {
      const size_t end = html.find("-->", i);
      if (end == std::string::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    if (html.compare(i, 2, "<!") == 0) {
      const size_t end = html.find('>', i);
      if (end == std::string::npos) return "unterminated declaration";
      i = end + 1;
      continue;
    }
    const bool closing = html.compare(i, 2, "</") == 0;
    size_t j = i + (closing ? 2 : 1);
    size_t name_start = j;
    while (j < html.size() && (std::isalnum(static_cast<unsigned char>(html[j])) || html[j] == '-')) ++j;
    const std::string name = html.substr(name_start, j - name_start);
    if (name.empty()) return "line " + line_of(i) + ": '<' that starts no tag";
    // Attributes: name="value" only.
    bool self_closing = false;
    while (true) {
      while (j < html.size() && std::isspace(static_cast<unsigned char>(html[j]))) ++j;
      if (j >= html.size()) return "unterminated tag <" + name;
      if (html[j] == '>') {
        ++j;
        break;
      }
      if (html.compare(j, 2, "/>") == 0) {
        self_closing = true;
        j += 2;
        break;
      }
      if (closing) return "line " + line_of(i) + ": attributes on a closing tag </" + name;
      const size_t an = j;
      while (j < html.size() && (std::isalnum(static_cast<unsigned char>(html[j])) || html[j] == '-' || html[j] == ':')) ++j;
      if (j == an) return "line " + line_of(j) + ": bad attribute in <" + name;
      if (html[j] != '=' || html[j + 1] != '"') return "line " + line_of(j) + ": unquoted attribute in <" + name;
      const size_t close = html.find('"', j + 2);
      if (close == std::string::npos) return "unterminated attribute in <" + name;
      const std::string value = html.substr(j + 2, close - j - 2);
      if (value.find('<') != std::string::npos) return "line " + line_of(j) + ": '<' inside an attribute of <" + name;
      j = close + 1;
    }
    if (name == "style" && !closing) {
      const size_t end = html.find("</style>", j);
      if (end == std::string::npos) return "unterminated <style>";
      i = end + 8;
      continue;
    }
    if (closing) {
      if (stack.empty() || stack.back() != name) {
        return "line " + line_of(i) + ": </" + name + "> closes " + (stack.empty() ? "nothing" : "<" + stack.back() + ">");
      }
      stack.pop_back();
    } else if (!self_closing && !void_elements.count(name)) {
      stack.push_back(name);
    }
    i = j;
  }
  if (!stack.empty()) return "<" + stack.back() + "> is never closed";
  return "";
}


std::string chromium_binary() {
  for (const char* b : {"chromium", "chromium-browser"}) {
    if (have_program(b)) return b;
  }
  return "";
}

CliResult run_chromium(const std::string& bin, const fs::path& profile, const std::string& what, const fs::path& page) {
  return run_shell("timeout 120 " + bin + " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" +
                   profile.string() + " --enable-logging=stderr --v=0 " + what + " file://" + page.string());
}

bool has_console_message(const std::string& log) { return log.find(":CONSOLE") != std::string::npos; }

}  // namespace acceltune::test
