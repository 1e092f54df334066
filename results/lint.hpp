// `acceltune lint`'s checks as a library: hand-edited tuning files (env and ucx-env files, Open MPI
// rules, NCCL tuner tables, MPICH selection JSON, bring-up bundles) checked against the libraries
// installed on this node, every problem with its line and what to write instead. One entry point,
// lint_path(), so `verify` and `bringup` can lint their own files the way the command does; each
// format's checks live in their own file (results/lint_FORMAT.cpp).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tuner/expected.hpp"
#include "tuner/value.hpp"

namespace acceltune {

// One problem: FILE:LINE: problem; write ...
struct LintFinding {
  std::string path;
  int line = 0;         // 1-based; 0: the file as a whole
  std::string problem;  // what is wrong
  std::string fix;      // what to write instead
};
std::string to_string(const LintFinding& f);

struct LintReport {
  std::vector<LintFinding> findings;
  std::vector<std::string> notes;  // checks skipped and why (a missing ucx_info), never findings
  std::vector<std::string> linted;  // the files checked, with their format: "FILE (ompi-rules)"
};

// The formats lint knows: env, ucx-env, ompi-rules, nccl-tuner, mpich-json.
const std::vector<std::string>& lint_formats();

// What the installed libraries say, asked once per lint run (nothing is cached on disk).
struct UcxFacts {
  std::set<std::string> names;                   // every UCX_* variable UCX reads, unprefixed forms included
  std::map<std::string, std::string> syntax;     // variable: ucx_info -cf's "syntax:" line
  std::set<std::string> transport_prefixes;      // "TCP_", "RC_VERBS_", ...: the per-transport forms
  std::set<std::string> transports;              // ucx_info -d's transports and UCX's aliases
};
struct OmpiFacts {
  std::map<std::string, std::set<int64_t>> algorithms;  // collective ("allreduce"): valid algorithm ids
  std::string version;
};
class LintContext {
 public:
  // nullptr, with the reason in `why`, when ucx_info / ompi_info is absent or says nothing.
  const UcxFacts* ucx(std::string& why);
  const OmpiFacts* ompi(std::string& why);
  // This machine's fingerprint: "id" and "loader_fields" (probe/fingerprint.hpp, identity scope).
  const Json& fingerprint();
  // Test seam: facts as given instead of the tools' (a fake UCX or Open MPI).
  void set_ucx(std::optional<UcxFacts> f, std::string why = "");
  void set_ompi(std::optional<OmpiFacts> f, std::string why = "");

 private:
  bool ucx_asked_ = false, ompi_asked_ = false;
  std::optional<UcxFacts> ucx_;
  std::optional<OmpiFacts> ompi_;
  std::string ucx_why_, ompi_why_;
  std::optional<Json> fingerprint_;
};

// Lints a file (its format from `format`, else from its content and name) or a bring-up bundle
// folder (each file it recognises). An unreadable or unrecognisable file is an input error (exit 2);
// findings are data.
Expected<LintReport> lint_path(const std::string& path, const std::string& format, LintContext& ctx);
std::vector<LintFinding> lint_file(const std::string& path, const std::string& format);  // a fresh context; errors as findings

// The format of a file's text, from its name and content; empty when neither says.
std::string detect_lint_format(const std::string& path, const std::string& text);

// Each format's checks (results/lint_FORMAT.cpp), appending to `r`. The env checks read a bundle's
// files beside its acceltune.env, as job.sh does, when they look for the files a variable names.
void lint_env_text(const std::string& path, const std::string& text, bool ucx_only, LintContext& ctx, LintReport& r);
void lint_ompi_rules_text(const std::string& path, const std::string& text, LintContext& ctx, LintReport& r);
void lint_nccl_tuner_text(const std::string& path, const std::string& text, LintReport& r);
void lint_mpich_json_text(const std::string& path, const std::string& text, LintReport& r);
// The "# acceltune fingerprint: ID" and "# acceltune fingerprint_fields: {...}" header of an export
// against this machine's.
void lint_fingerprint(const std::string& path, const std::string& text, LintContext& ctx, LintReport& r);

// A UCX_* variable's name and value against the installed UCX (results/lint_ucx.cpp).
void lint_ucx_variable(const std::string& path, int line, const std::string& var, const std::string& value,
                       const UcxFacts& ucx, LintReport& r);

// Shared by the checks: lower case.
std::string lint_lower(std::string s);
// The closest of `names` to `name` (edit distance), empty when none is close.
std::string closest_name(const std::string& name, const std::set<std::string>& names);
// Runs a program (argv[0] looked up in PATH) and returns its standard output; nullopt when it is
// absent or fails, with the reason in `why`.
std::optional<std::string> run_for_output(const std::vector<std::string>& argv, std::string& why);

}  // namespace acceltune
