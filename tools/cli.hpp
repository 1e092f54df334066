// What the commands of the command line share: error reporting, number and table formatting,
// the set-up of a space with its kernel, and studies read back from their directories. Each
// command lives in its own file (cmd_NAME.cpp) and adds itself to the app.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "results/study_dir.hpp"
#include "tuner/best.hpp"
#include "tuner/duration.hpp"
#include "tuner/kernel.hpp"
#include "tuner/trial.hpp"

namespace acceltune::cli {

inline constexpr const char* kResultsRoot = "acceltune-results";

// A new folder under the results root that nothing uses yet: NAME-YYYYMMDDTHHMMSS[-N].
std::filesystem::path fresh_study_dir(const std::string& name);

// Prints "acceltune: MESSAGE" and returns the error's exit code (2 input, 1 runtime).
int fail(const Error& e);
// The message of the last fail() of this process, empty before any.
const std::string& last_failure();
bool stderr_is_terminal();

std::string format_seconds(double s);
std::string format_value(double v);
std::map<std::string, std::string> units_of(const Json& space_definition);
// The params where a config differs from the default, or "(default)".
std::string describe_config(const Json& config, const Json& default_config,
                            const std::map<std::string, std::string>& units);
void print_best_table(const BestTable& b, const Json& space_definition, std::FILE* out);
// The study's best figure against the ceiling of the link it crossed (probe/links.hpp): one line
// with the verdict, the ceiling's basis, and what the probe suggests for a low one.
void print_efficiency(const Json& study, const BestTable& b, std::FILE* out);

// An option that takes a duration (tuner/duration.hpp), stored in seconds; its help names the
// forms. A value that is not one, or outside [min_seconds, max_seconds], is refused while the
// command line is parsed (exit 2), naming the option and the forms. Where `zero_allowed` (the
// option's help says what 0 means), 0 passes whatever min_seconds says.
struct DurationBounds {
  double min_seconds = 0;
  double max_seconds = std::numeric_limits<double>::infinity();
  bool zero_allowed = false;
};
CLI::Option* add_duration_option(CLI::App* command, const std::string& name, double& seconds, const std::string& help,
                                 const DurationBounds& bounds = {});

// Where the two ends of a transfer kernel run: this host (the kernel's default), two network
// namespaces that acceltune creates (--netns), or an `acceltune serve` on another host (--peer).
struct PlacementArgs {
  bool netns = false;
  std::string peer;
  std::string secret_file;  // --secret-file: set as ACCELTUNE_SECRET_FILE for the kernel and its children
};
void add_placement_options(CLI::App* command, PlacementArgs& args);

// --ranks N of search and bench: the rank count of a space whose kernel runs ranks (MPI, NCCL),
// set without editing its file; 0: the space's own.
void add_ranks_option(CLI::App* command, int& ranks);
// `fields` (fields of the space's file to replace, or null) with "ranks" set when ranks > 0.
Json with_ranks(Json fields, int ranks);

// Common set-up of search and bench: the space, its kernel attached, and the sizes. A search
// (`to_tune`) is refused where the kernel has nothing to tune; bench measures anyway.
struct Prepared {
  Space space;
  std::unique_ptr<Kernel> kernel;
  Workload workload;
};
// `space_fields`: fields of a shipped space's file replaced (tools/spaces_path.hpp).
Expected<Prepared> prepare(const std::string& space_arg, const std::string& sizes_arg,
                           const PlacementArgs& placement = {}, bool to_tune = false, const Json& space_fields = nullptr);

// argv of this binary's hidden worker mode.
std::vector<std::string> worker_command();

Json search_defaults(const Space& space);

// A study for a command that uses its best table (results/study_dir.hpp's StudyParts::best), saying
// on stderr when that table is computed from the trials because best.json is missing.
Expected<StudyData> load_study_best(const std::string& dir);

// A command adds its subcommand and options to the app and says what runs when it is chosen.
struct CommandList {
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  void add(CLI::App* sub, std::function<int()> run) { commands.emplace_back(sub, std::move(run)); }
};

void add_probe_command(CLI::App& app, CommandList& list);
void add_spaces_command(CLI::App& app, CommandList& list);
void add_search_command(CLI::App& app, CommandList& list);
void add_bench_command(CLI::App& app, CommandList& list);
void add_best_command(CLI::App& app, CommandList& list);
void add_export_command(CLI::App& app, CommandList& list);
void add_exec_command(CLI::App& app, CommandList& list);
void add_serve_command(CLI::App& app, CommandList& list);
void add_compare_command(CLI::App& app, CommandList& list);
void add_report_command(CLI::App& app, CommandList& list);
void add_verify_command(CLI::App& app, CommandList& list);
void add_bringup_command(CLI::App& app, CommandList& list);
void add_lint_command(CLI::App& app, CommandList& list);

// The delivered gain of a study's best table through tuner/verify.hpp's verify_and_fall_back
// (`measurements` and `fall_back` as there), each measurement printed with certified and delivered
// side by side. Returns 0 when the plan ships, kExitNoLongerPays when it does not, kExitNotVerified
// when nothing was measured (no plain client, a plan that loads nothing, no time left), 1 or 2 on
// failure.
// With `fall_back`, a plan whose job failed is the defaults afterwards and the return is 1.
// `max_rounds`: the verdict's cap on rounds (0: tuner/verdict.hpp's); `deadline`: no round starts
// after it (the plan then ships only if already decided); `plan_b`: what a plan whose job-wide
// part does not ship falls back to first (tuner/verify.hpp's DeliverOptions).
int verify_study(BestTable& b, int rounds, bool check_fingerprint, int measurements = 1, bool fall_back = false,
                 int max_rounds = 0, Deadline deadline = std::nullopt, std::map<uint64_t, Json> plan_b = {});
// docs/formats.md's one exit-code table: 0 success, 1 runtime failure, 2 bad usage or input, these three,
// 128 + N stopped by signal N.
inline constexpr int kExitNoLongerPays = 3;  // verify: the plan does not ship
inline constexpr int kExitNotVerified = 4;   // verify, gpu-check.sh: nothing could be measured here
inline constexpr int kExitLintFindings = 5;  // lint: findings

// The shares of `search --time-limit` that certification and the delivered measurement get; the
// search has the rest (bring-up's progress line names the stage from them).
inline constexpr double kCertifyShare = 0.2, kDeliverShare = 0.4;

}  // namespace acceltune::cli
