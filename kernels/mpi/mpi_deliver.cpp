// The plain client of the mpi-coll family for delivered gains (tuner/delivery.hpp): the export is
// loaded the way a user's job loads it, by starting
//   mpirun -np RANKS --bind-to none [--oversubscribe] acceltune-mpi-client --op OP --sizes ...
// with the arm's environment (the env file's lines, the rules file's switch and path) and nothing
// of acceltune in between: the client is a plain C MPI program (kernels/mpi_client.c) beside the
// acceltune binary, so what it measures is what Open MPI does with the export on its own. Each
// measure() is one job over all sizes; its value per size is the per-rank buffer bytes over the
// median call time (the slowest rank's), in GB/s.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "kernels/shared/child_process.hpp"
#include "tuner/binary.hpp"
#include "tuner/collectives.hpp"
#include "tuner/delivery.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

constexpr const char* kClientName = "acceltune-mpi-client";
// Per size: untimed calls, then calls timed one by one. Enough for a stable median of small
// messages while a job over the usual sizes stays around a second, most of it mpirun's start.
constexpr int kWarmupCalls = 20;
constexpr int kTimedCalls = 200;
// A hung job (a transport that never connects) is ended after this, plus an allowance for the
// sizes at a pessimistic 100 MB/s, so a large message is never cut off while still moving.
constexpr double kJobTimeoutSeconds = 120;
constexpr double kSlowestBytesPerSecond = 1e8;
// Open MPI reads a missing rules file as no rules at all, without a word.
constexpr const char* kRulesFileVar = "OMPI_MCA_coll_tuned_dynamic_rules_filename";

// Why a job failed, from its stderr: the client's own words when it said something, else what
// the ranks said (the lines Open MPI prefixes with "[host:pid] ", such as "PML ucx cannot be
// selected" or "*** MPI_ERR_ARG: ..."), else the last lines of mpirun's help text. Prefixes and
// help-message boilerplate are dropped, so what every rank said reads once.
std::string why_failed(const std::string& err) {
  std::vector<std::string> lines, own, ranks;
  std::stringstream ss(err);
  for (std::string l; std::getline(ss, l);) {
    bool from_rank = false;
    if (l.size() > 1 && l[0] == '[') {
      const auto close = l.find("] ");
      if (close != std::string::npos) {
        l = l.substr(close + 2);
        from_rank = true;
      }
    }
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    const auto first = l.find_first_not_of(" *");
    if (first == std::string::npos || l.find_first_not_of('-') == std::string::npos) continue;
    l = l.substr(first);
    if (l.find("has sent help message") != std::string::npos || l.find("have sent help message") != std::string::npos ||
        l.find("orte_base_help_aggregate") != std::string::npos) {
      continue;
    }
    if (std::find(lines.begin(), lines.end(), l) != lines.end()) continue;
    lines.push_back(l);
    // mpirun's own ORTE_ERROR_LOG lines (its help-message relay losing a race when every rank
    // aborts at once) say nothing of the cause.
    if (l.find(kClientName) != std::string::npos) own.push_back(l);
    else if (from_rank && l.find("ORTE_ERROR_LOG") == std::string::npos) ranks.push_back(l);
  }
  const std::vector<std::string>& pick = !own.empty() ? own : !ranks.empty() ? ranks : lines;
  const size_t keep = 6;
  std::string s;
  for (size_t i = pick.size() > keep ? pick.size() - keep : 0; i < pick.size(); ++i) s += (s.empty() ? "" : " | ") + pick[i];
  return s.empty() ? "no output on stderr" : s;
}

// "size=4096 median_seconds=3.1e-06 p10_seconds=... p90_seconds=..." -> bytes, median.
bool parse_line(const std::string& line, uint64_t* bytes, double* median_seconds) {
  std::stringstream ss(line);
  bool have_size = false, have_median = false;
  for (std::string field; ss >> field;) {
    const auto eq = field.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    char* end = nullptr;
    if (key == "size") {
      *bytes = std::strtoull(value.c_str(), &end, 10);
      have_size = end && *end == '\0' && !value.empty();
    } else if (key == "median_seconds") {
      *median_seconds = std::strtod(value.c_str(), &end);
      have_median = end && *end == '\0' && !value.empty();
    }
  }
  return have_size && have_median;
}

class MpiSession final : public DeliverySession {
 public:
  MpiSession(Json study, std::string mpirun, std::string client, std::string op, int ranks,
             std::vector<std::string> launcher_args)
      : study_(std::move(study)),
        mpirun_(std::move(mpirun)),
        client_(std::move(client)),
        op_(std::move(op)),
        ranks_(ranks),
        launcher_args_(std::move(launcher_args)) {}

  Expected<std::map<uint64_t, double>> measure(const DeliveryArm& arm, const std::vector<uint64_t>& sizes) override {
    if (sizes.empty()) return input_error("acceltune verify: no message size to measure");
    for (const auto& [k, v] : arm.env) {
      if (k != kRulesFileVar) continue;
      // Open MPI would run on its defaults without a word, and the plan would "deliver" nothing.
      std::error_code ec;
      if (!fs::is_regular_file(v, ec) || ::access(v.c_str(), R_OK) != 0) {
        return runtime_error("acceltune verify: arm '{}': the rules file {} named by {} cannot be read (Open MPI "
                             "would silently ignore it); export the study again, or fix the path",
                             arm.name, v, k);
      }
    }
    std::vector<std::string> argv = {mpirun_, "-np", std::to_string(ranks_), "--bind-to", "none"};
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0 && ranks_ > cpus) argv.push_back("--oversubscribe");
    argv.insert(argv.end(), launcher_args_.begin(), launcher_args_.end());
    std::string size_list;
    double allowance_seconds = 0;
    for (uint64_t b : sizes) {
      size_list += (size_list.empty() ? "" : ",") + std::to_string(b);
      allowance_seconds += (kWarmupCalls + kTimedCalls) * static_cast<double>(b) / kSlowestBytesPerSecond;
    }
    argv.insert(argv.end(), {client_, "--op", op_, "--sizes", size_list, "--iters", std::to_string(kTimedCalls),
                             "--warmup", std::to_string(kWarmupCalls)});

    std::vector<std::string> env = job_environment(study_, arm);
    if (::geteuid() == 0) {
      // mpirun refuses root without both; a user's job as root needs them the same way.
      const std::set<std::string> root_vars = {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"};
      env.erase(std::remove_if(env.begin(), env.end(),
                               [&](const std::string& kv) { return root_vars.count(kv.substr(0, kv.find('='))) > 0; }),
                env.end());
      for (const auto& v : root_vars) env.push_back(v + "=1");
    }

    std::string arm_vars;
    for (const auto& [k, v] : arm.env) arm_vars += (arm_vars.empty() ? "" : " ") + k + "=" + v;
    const std::string what = fmt::format("arm '{}' ({})", arm.name, arm_vars.empty() ? "no variables" : arm_vars);
    // The job gets a process group of its own: at the deadline mpirun is asked first (SIGTERM
    // makes it end its ranks), then the group is killed; a rank orphaned by a dead mpirun may
    // hold a pipe open, and what mattered has arrived 2 s after mpirun's exit.
    const double timeout_seconds = kJobTimeoutSeconds + allowance_seconds;
    auto run = Child::run(argv, env, timeout_seconds,
                          ChildOptions{.own_group = true, .grace_seconds = 5, .linger_after_exit_seconds = 2});
    if (!run) return runtime_error("acceltune verify: {}: {}", what, run.error().message);
    if (run->timed_out) {
      return runtime_error("acceltune verify: {}: '{}' did not finish within {:.0f} s and was ended", what,
                           argv_text(argv), timeout_seconds);
    }
    if (run->exit_code != 0) {
      const std::string how = run->exit_code > 128 ? fmt::format("was killed by signal {}", run->exit_code - 128)
                                                   : fmt::format("exited with status {}", run->exit_code);
      return runtime_error("acceltune verify: {}: '{}' {}: {}", what, argv_text(argv), how, why_failed(run->err));
    }

    const std::set<uint64_t> asked(sizes.begin(), sizes.end());
    std::map<uint64_t, double> gbps;
    std::stringstream lines(run->out);
    for (std::string line; std::getline(lines, line);) {
      uint64_t bytes = 0;
      double median_seconds = 0;
      if (!parse_line(line, &bytes, &median_seconds) || !asked.count(bytes) || !(median_seconds > 0)) continue;
      gbps[bytes] = static_cast<double>(bytes) / median_seconds / 1e9;
    }
    if (gbps.empty()) {
      return runtime_error("acceltune verify: {}: '{}' printed no result line (stdout: '{}'; stderr: {})", what,
                           argv_text(argv), run->out.substr(0, 200), why_failed(run->err));
    }
    return gbps;
  }

 private:
  Json study_;
  std::string mpirun_, client_, op_;
  int ranks_;
  std::vector<std::string> launcher_args_;
};

Expected<std::unique_ptr<DeliverySession>> open_mpi_session(const Json& study) {
  const Json workload = study.is_object() ? study.value("workload", Json::object()) : Json::object();
  const Json space = study.is_object() ? study.value("space", Json::object()) : Json::object();
  const std::string op = workload.value("operation", std::string());
  // The client (kernels/mpi/mpi_client.c) times every collective with an MPI name, by that name.
  if (!find_mpi_collective(op)) {
    std::string names;
    for (const auto& row : collective_rows()) {
      if (!row.mpi_name.empty()) names += (names.empty() ? "" : ", ") + std::string(row.mpi_name);
    }
    return input_error("acceltune verify: the study's operation '{}' is not one the MPI client times ({})", op, names);
  }
  const Json ranks_json = workload.contains("ranks") ? workload["ranks"] : space.value("ranks", Json(2));
  if (!ranks_json.is_number_integer() || ranks_json.get<int64_t>() < 2 || ranks_json.get<int64_t>() > 4096) {
    return input_error("acceltune verify: the study's workload.ranks is {}, not an integer from 2 to 4096",
                       ranks_json.dump());
  }
  // The space's own mpirun arguments (a hostfile, say) were part of every measurement; both arms
  // keep them.
  std::vector<std::string> launcher_args;
  for (const auto& a : space.value("launcher_args", Json::array())) {
    if (!a.is_string()) return input_error("acceltune verify: the study's space.launcher_args must be strings");
    launcher_args.push_back(a.get<std::string>());
  }

  // The same launcher the kernel uses: ACCELTUNE_MPIRUN when set (README), else mpirun on PATH.
  const char* asked = std::getenv("ACCELTUNE_MPIRUN");
  const std::string mpirun = find_on_path(asked && *asked ? asked : "mpirun").value_or("");
  if (mpirun.empty()) {
    if (asked && *asked) {
      return runtime_error("acceltune verify: ACCELTUNE_MPIRUN names '{}', which is not an executable on PATH; unset "
                           "it or point it at mpirun",
                           asked);
    }
    return runtime_error("acceltune verify: mpirun not found; install the Debian package openmpi-bin");
  }

  ACCELTUNE_TRY_ASSIGN(const std::string client,
                       companion_binary(kClientName, "ACCELTUNE_MPI_CLIENT", "the MPI client"));
  return std::unique_ptr<DeliverySession>(new MpiSession(study, mpirun, client, op,
                                                          static_cast<int>(ranks_json.get<int64_t>()),
                                                          std::move(launcher_args)));
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::DeliveryClient, "mpi-coll",
                   (::acceltune::DeliveryClient{"a plain MPI collective timer (acceltune-mpi-client) under mpirun -np "
                                                "RANKS --bind-to none, with the export's environment and rules file",
                                                ::acceltune::open_mpi_session}))
