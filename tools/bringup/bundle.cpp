// The bring-up bundle's files: each study's contribution (its plan's variables and files), the
// merged environment written as acceltune.env, its subsets, the per-size files and job.sh. The
// merge itself, measured through the studies' clients, is tools/bringup/merge.cpp.
#include "tools/bringup/bundle.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "tuner/plan.hpp"
#include "tuner/regular_file.hpp"

namespace acceltune::bringup {
namespace {

namespace fs = std::filesystem;

// The certified gain a study brings, over all its sizes.
std::string certified_gain(const BestTable& b) {
  const std::string range = certified_range_text(b);
  if (!range.empty()) return "certified " + range;
  const std::string found = certified_range_text(b, /*as_planned=*/false);
  if (!found.empty()) return "certified " + found + " (not kept: see the plan)";
  return b.certified ? "no significant certified gain" : "not certified";
}

// A bundle file's name for a plan file's format: the one a family names for it, else the plan
// file's own.
std::string bundle_file_name(const std::string& format, const std::string& plan_path) {
  for (const auto& [name, f] : families_in_order()) {
    for (const auto& file : f->bundle_files) {
      if (!file.plan_format.empty() && file.plan_format == format) return file.name;
    }
  }
  return fs::path(plan_path).filename().string();
}

std::string comment_block(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    out += "# " + text.substr(i, j - i) + "\n";
    i = j + 1;
  }
  return out;
}

// Why a family's file is empty: the family did not run here, or what its empty file means.
std::string why_empty(const std::vector<Family>& families, const std::string& family, const BundleFile& file) {
  for (const auto& f : families) {
    if (f.name == family && !f.skipped.empty()) return fmt::format("no {} study ran: {}", family, f.skipped);
  }
  return file.when_empty;
}

// Whether a family's files belong in this bundle: a family bring-up considered (a test family
// only when --only named it), so a build with the test families writes no file of theirs.
bool considered(const std::vector<Family>& families, const std::string& family) {
  return std::any_of(families.begin(), families.end(), [&](const Family& f) { return f.name == family; });
}

// An empty file's text: the header and why; a script stays runnable and does nothing.
std::string empty_file_text(const BundleFile& file, const std::string& header, const std::string& why) {
  if (file.script) return "#!/bin/sh\n" + header + "# " + why + "\nexit 0\n";
  return header + "# " + why + "\n";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Expected<Contribution> contribution_of(const StudyData& study, const std::string& bundle_dir) {
  Contribution c;
  c.study = &study;
  BestTable b = study.best;
  b.study = study.study;
  b.dir = study.dir;
  ACCELTUNE_TRY(write_plan_files(b));
  ACCELTUNE_TRY_ASSIGN(PlanEnv pe, plan_env(b));
  c.pinned = pinned_env(study.study);
  std::map<std::string, std::string> path_to_bundle;
  for (const auto& [format, path] : pe.files) {
    const std::string name = bundle_file_name(format, path);
    c.files.emplace_back(name, path);
    path_to_bundle[path] = (fs::absolute(bundle_dir) / name).lexically_normal().string();
  }
  // Held-back lines too: the bundle measures every path under them (leave_out_unmeasured_paths).
  for (const auto& kv : own_path_env(pe)) {
    if (std::find(c.pinned.begin(), c.pinned.end(), kv) != c.pinned.end()) continue;
    const auto f = path_to_bundle.find(kv.second);
    c.vars.emplace_back(kv.first, f == path_to_bundle.end() ? kv.second : f->second);
  }
  c.gain = certified_gain(b);
  return c;
}

bool reads(const Contribution& c, const std::string& var) {
  for (const auto& kv : c.vars) {
    if (kv.first == var) return true;
  }
  return c.study && family_reads(c.study->best.kernel, c.vars, var);
}

std::string single_node_only(const std::string& var, const std::string& value) {
  for (const auto& [name, f] : families_in_order()) {
    if (!f->single_node_only) continue;
    std::string why = f->single_node_only(var, value);
    if (!why.empty()) return why;
  }
  return "";
}

std::string env_file_text(const Bundle& bundle, const std::string& header) {
  std::string out = header;
  out += "# Load: BUNDLE/job.sh COMMAND [ARGS...], or `set -a; . ./acceltune.env; set +a` in a shell.\n";
  out += "# Paths in it are absolute: sourced by a shell, they hold only where the bundle was written. A moved\n"
         "# or copied bundle loads through its job.sh, `acceltune exec --config BUNDLE` or the loader given\n"
         "# BUNDLE, which find its files beside acceltune.env.\n";
  if (bundle.env.empty()) out += "# no study's plan sets a variable: every library keeps its own defaults\n";
  for (const auto& l : bundle.env) {
    out += "\n# " + l.why + "\n";
    out += fmt::format("{}{}={}\n", l.left_out ? "# " : "", l.var, l.value);
  }
  if (!bundle.notes.empty()) {
    out += "\n";
    for (const auto& n : bundle.notes) out += "# note: " + n + "\n";
  }
  return out;
}

std::string env_subset_text(const Bundle& bundle, const std::string& header, const BundleFile& file) {
  std::string out = header;
  out += "# " + file.about + "\n";
  bool any = false;
  for (const auto& l : bundle.env) {
    if (l.var.rfind(file.env_prefix, 0) != 0) continue;
    any = true;
    out += "\n# " + l.why + "\n";
    out += fmt::format("{}{}={}\n", l.left_out ? "# " : "", l.var, l.value);
  }
  if (!any) out += "# " + file.when_empty + "\n";
  return out;
}

const BundleFile* find_bundle_file(const std::string& name) {
  for (const auto& [family, f] : families_in_order()) {
    for (const auto& file : f->bundle_files) {
      if (file.name == name) return &file;
    }
  }
  return nullptr;
}

std::map<std::string, std::string> plan_files_text(const std::vector<Family>& families,
                                                   const std::vector<Contribution>& contributions,
                                                   const std::string& header) {
  std::map<std::string, std::string> out;
  for (const auto& c : contributions) {
    for (const auto& [name, path] : c.files) {
      // A second table of the same file (NCCL: one per collective) follows the first, named.
      if (!out[name].empty()) out[name] += fmt::format("\n# from study {}\n", c.study->best.space);
      std::string text, why;
      if (!read_regular_file(path.c_str(), text, why)) text = comment_block(fmt::format("{}: {}", path, why));
      out[name] += text;
    }
  }
  for (const auto& [family, f] : families_in_order()) {
    if (!considered(families, family)) continue;
    for (const auto& file : f->bundle_files) {
      if (file.plan_format.empty() || out.count(file.name)) continue;
      out[file.name] = empty_file_text(file, header, why_empty(families, family, file));
    }
  }
  return out;
}

std::vector<BundleText> merged_files_text(const std::vector<Family>& families, const std::vector<StudyData>& studies,
                                          const Bundle& merged, const std::string& header) {
  std::vector<BundleText> out;
  for (const auto& [family, f] : families_in_order()) {
    if (!considered(families, family)) continue;
    for (const auto& file : f->bundle_files) {
      if (!file.env_prefix.empty()) {
        out.push_back({file.name, env_subset_text(merged, header, file), file.script});
        continue;
      }
      if (file.export_format.empty()) continue;
      std::string text;
      for (const auto& d : studies) {  // the family's last finished study
        if (family_name_of_kernel(d.best.kernel) != family || d.best.trials_ok == 0) continue;
        BestTable b = d.best;
        b.dir = d.dir;
        auto e = emit(file.export_format, b);
        text = e ? *e
                 : "#!/bin/sh\n" + comment_block(fmt::format("the {} export failed: {}", file.export_format, e.error().message));
      }
      out.push_back({file.name, text.empty() ? empty_file_text(file, header, why_empty(families, family, file)) : text,
                     file.script});
    }
  }
  return out;
}

std::string job_script_text(const Bundle& bundle) {
  std::string out =
      "#!/bin/sh\n"
      "# acceltune bring-up bundle: runs a command with every tuned variable of this bundle set.\n"
      "#   BUNDLE/job.sh mpirun -np 8 ./app   Open MPI: each variable also goes to remote ranks (-x)\n"
      "#   BUNDLE/job.sh srun ./app           srun passes the environment on\n"
      "#   BUNDLE/job.sh ./app\n"
      "# The per-size files are named relative to this script, so the bundle may be moved. The TCP\n"
      "# settings (tcp-settings.sh) change the host and need root: review them and run them yourself.\n"
      "set -e\n"
      "here=$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd)\n";
  std::vector<std::string> names;
  for (const auto& l : bundle.env) {
    if (l.left_out) continue;
    names.push_back(l.var);
    if (l.is_file) {
      out += fmt::format("export {}=\"$here/{}\"\n", l.var, fs::path(l.value).filename().string());
    } else {
      out += fmt::format("export {}={}\n", l.var, shell_quote(l.value));
    }
  }
  out += "vars='" + join(names, " ") + "'\n";
  out +=
      "if [ $# -eq 0 ]; then\n"
      "  echo \"usage: $0 COMMAND [ARGS...]   (e.g. $0 mpirun -np 8 ./app)\" >&2\n"
      "  exit 2\n"
      "fi\n"
      "case $(basename -- \"$1\") in\n"
      "  mpirun|mpiexec|orterun|oshrun)\n"
      "    if \"$1\" --version 2>&1 | grep -q 'Open MPI'; then\n"
      "      launcher=$1\n"
      "      shift\n"
      "      for v in $vars; do set -- -x \"$v\" \"$@\"; done\n"
      "      exec \"$launcher\" \"$@\"\n"
      "    fi\n"
      "    ;;\n"
      "esac\n"
      "exec \"$@\"\n";
  return out;
}

}  // namespace acceltune::bringup
