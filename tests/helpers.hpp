// Shared test helpers: temporary folders, files, and running the acceltune binary.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "tuner/best.hpp"
#include "tuner/kernel.hpp"
#include "tuner/measurement.hpp"
#include "tuner/space.hpp"

namespace acceltune::test {

// Message sizes the study fixtures use.
inline constexpr uint64_t k64K = 64 * 1024, k1M = 1024 * 1024, k4M = 4 * 1024 * 1024;

// A fresh folder under the system temp dir, removed when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::string& text);
std::string read_file(const std::filesystem::path& path);

// Parses a space from JSON text as a space file (read against its tables); fails the test on error.
Space space_from_text(const std::string& json_text);
// The same, read as a study's stored definition: as it states itself, without the tables.
Space space_from_definition(const std::string& json_text);
// The error message of a space that must not load (and its exit code).
Error space_error(const std::string& json_text);

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the acceltune binary with these arguments (each shell-quoted), in folder `cwd`.
CliResult run_cli(const std::vector<std::string>& args, const std::filesystem::path& cwd = {},
                  const std::string& env_prefix = "");

std::vector<std::string> lines_of(const std::string& text);

// Short measurements for kernel tests: a warm-up, a time cap, and sample bounds (below 1: the
// driver's own).
MeasureSettings quick_settings(double warmup_seconds, double max_seconds, int min_samples = 0, int max_samples = 0);

// A delivered gain with its interval over `rounds` rounds; faster or slower as the interval says.
Delivered delivered_gain(double ratio, double ci_low, double ci_high, int rounds = 5);

// The default config of a space with NAME=VALUE set; each must be in its domain, and with
// `expect_valid` the config must keep the space's constraints.
Config config_with(const Space& s, const std::vector<std::pair<std::string, std::string>>& sets,
                   bool expect_valid = false);

// A shipped space attached to its kernel. When make_kernel's message holds one of
// `absent_markers` (the backend or hardware is missing) `skip` gets it; any other error fails
// the test. `edit` changes the space before it is attached.
struct Attached {
  Space space;
  std::unique_ptr<Kernel> kernel;
};
std::optional<Attached> attach_shipped(const std::string& name, std::string& skip,
                                       const std::vector<std::string>& absent_markers,
                                       const std::function<void(Space&)>& edit = {});

// argv of the acceltune binary's worker mode, for studies run inside a test binary.
std::vector<std::string> worker_command();

// Starts acceltune with these arguments in the background, in `cwd`, with `env` (NAME=VALUE)
// added to this process's environment and its output in `output`; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                const std::vector<std::string>& env = {}, const std::filesystem::path& output = "/dev/null");
// Waits up to `seconds` for a child to end: its exit code, 128 + the signal that killed it, or -1
// when it is still running.
int wait_exit(pid_t pid, double seconds);

// A variable name no other test uses (ACCELTUNE_TEST_MARK_<pid>_<n>), for spawn_cli's env: every
// process a command starts inherits it, so a test can see what is left (marked_processes).
std::string fresh_mark();
// Waits up to `seconds` until a process carrying `mark` has `what` in its command line.
bool wait_for_marked(const std::string& mark, const std::string& what, double seconds);
// Waits up to `seconds` until no process carries `mark`; a description of those left otherwise.
std::string left_over(const std::string& mark, double seconds);
// Waits up to `seconds` until folder `dir` is empty; the names left in it otherwise.
std::string files_left(const std::filesystem::path& dir, double seconds);

// Paths the build knows, each with a runtime override, so the test programs run from wherever
// they are copied (the GPU bundle, tools/gpu-bundle.sh):
// the acceltune binary (ACCELTUNE_BINARY); also what the test main sets as the binary that
// kernels start again in their hidden modes (tuner/binary.hpp);
std::string acceltune_binary();
// the shipped spaces (the first folder of ACCELTUNE_SPACES_PATH, as acceltune reads it);
std::filesystem::path spaces_dir();
// the NCCL tuner plugin (ACCELTUNE_NCCL_PLUGIN);
std::string nccl_plugin();
// the build tree (ACCELTUNE_BUILD_DIR), for tests that install from it;
std::filesystem::path build_dir();
// the source tree (ACCELTUNE_SOURCE_DIR), for the files it holds beside the code (README.md,
// tools/ scripts); a copy without it names a folder that does not exist;
std::filesystem::path source_dir();
// any other built file: the variable `name` when set, else what the build compiled in.
std::string built_path(const char* name, const char* built);

// Runs a shell command line, its two streams apart.
CliResult run_shell(const std::string& command);
bool have_program(const std::string& name);
// Whether `p` holds within `seconds` (polled every 20 ms).
bool eventually(const std::function<bool()>& p, double seconds);
// Whether the far end ends the connection on `fd` within `seconds` (after any lines it sent first).
bool closed_by_far_end(int fd, double seconds);

// Checks HTML for well-formedness as this project writes it: every element closed in order (void
// elements excepted), attributes quoted, no stray '<' or unknown entity in text. Returns the
// first problem, empty when there is none.
std::string check_well_formed(const std::string& html);

// Headless Chromium: its binary (empty when not installed), a run of it on a page with `what`
// (--dump-dom, --screenshot=FILE ...) and its log on stderr, and whether that log holds a console
// message (an error of the page's).
std::string chromium_binary();
CliResult run_chromium(const std::string& bin, const std::filesystem::path& profile, const std::string& what,
                       const std::filesystem::path& page);
bool has_console_message(const std::string& log);

}  // namespace acceltune::test

// `auto var = attach(ARGS)` in a test, ARGS naming skip_VAR where attach writes why the backend or
// hardware is absent; the test then skips with that reason (attach: a test file's wrapper of
// test::attach_shipped).
#define ATTACH_OR_SKIP(var, ...)                           \
  std::string skip_##var;                                  \
  auto var = attach(__VA_ARGS__);                           \
  if (!var) {                                              \
    if (!skip_##var.empty()) GTEST_SKIP() << skip_##var;   \
    return;                                                \
  }
