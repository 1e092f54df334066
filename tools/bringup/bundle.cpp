// The bring-up bundle: one environment merged from every study's plan, conflicts settled by
// measurement, and the merged environment measured through every study's plain client.
#include "tools/bringup/bundle.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "tuner/cancel.hpp"
#include "tuner/delivery.hpp"
#include "tuner/plan.hpp"
#include "tuner/regular_file.hpp"

namespace acceltune::bringup {
namespace {

namespace fs = std::filesystem;

std::string interval(double r, double lo, double hi) {
  return fmt::format("{:.2f}x [{:.2f}, {}]", r, lo, std::isfinite(hi) ? fmt::format("{:.2f}", hi) : "inf");
}

// The certified gain a study brings, at its best significant size.
std::string certified_gain(const BestTable& b) {
  const SizeBest* top = nullptr;
  for (const auto& s : b.sizes) {
    if (!s.certified || !s.significant || !s.certified_ratio || s.chosen_is_default) continue;
    if (!top || *s.certified_ratio > *top->certified_ratio) top = &s;
  }
  if (!top) return b.certified ? "no significant certified gain" : "not certified";
  return fmt::format("certified {} at {}", interval(*top->certified_ratio, top->ci_low.value_or(0),
                                                    top->ci_high.value_or(INFINITY)),
                     format_bytes(top->bytes));
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

// An empty file's text: the header and why; a script stays runnable and does nothing.
std::string empty_file_text(const BundleFile& file, const std::string& header, const std::string& why) {
  if (file.script) return "#!/bin/sh\n" + header + "# " + why + "\nexit 0\n";
  return header + "# " + why + "\n";
}

void set_var(EnvVars& env, const std::string& var, const std::string& value) {
  for (auto& kv : env) {
    if (kv.first == var) {
      kv.second = value;
      return;
    }
  }
  env.emplace_back(var, value);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The merged bundle's figures for a study, one line: its best size, or why none.
std::string delivered_line(const BundleDelivery& d) {
  if (d.state != "measured") return "in the bundle: not verified (" + d.why + ")";
  const std::string text = best_delivered_text(d.sizes);
  return "in the bundle: " + (text.empty() ? std::string("no size measured") : "delivered " + text);
}

}  // namespace

std::string best_delivered_text(const std::map<uint64_t, Delivered>& sizes) {
  const std::pair<const uint64_t, Delivered>* top = nullptr;
  std::string slower;
  for (const auto& kv : sizes) {
    if (!top || kv.second.ratio > top->second.ratio) top = &kv;
    if (kv.second.slower) slower += (slower.empty() ? "" : ", ") + format_bytes(kv.first);
  }
  if (!top) return "";
  return fmt::format("{} at {}{}", interval(top->second.ratio, top->second.ci_low, top->second.ci_high),
                     format_bytes(top->first), slower.empty() ? "" : "; slower at " + slower);
}

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
  for (const auto& kv : pe.vars) {
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

std::map<std::string, std::vector<Wish>> conflicts(const std::vector<Contribution>& contributions) {
  std::map<std::string, std::vector<Wish>> wishes;
  for (const auto& c : contributions) {
    for (const auto& [var, value] : c.vars) {
      if (!single_node_only(var, value).empty()) continue;
      wishes[var].push_back(Wish{c.study->best.space, value});
    }
  }
  std::map<std::string, std::vector<Wish>> out;
  for (auto& [var, w] : wishes) {
    std::set<std::string> values;
    for (const auto& x : w) values.insert(x.value);
    if (values.size() > 1) out[var] = w;
  }
  return out;
}

std::vector<std::pair<std::string, EnvVars>> conflict_variants(const std::vector<Contribution>& contributions,
                                                               const std::map<std::string, std::vector<Wish>>& conflicting) {
  std::vector<std::pair<std::string, EnvVars>> out;
  for (const auto& c : contributions) {
    EnvVars v;
    for (const auto& [var, value] : c.vars) {
      if (conflicting.count(var)) v.emplace_back(var, value);
    }
    if (!v.empty()) out.emplace_back(c.study->best.space + "'s values", v);
  }
  out.emplace_back("the library's own values", EnvVars{});
  return out;
}

Score score_of(const std::map<uint64_t, Delivered>& delivered) {
  Score s;
  double log_sum = 0;
  int n = 0;
  for (const auto& [bytes, d] : delivered) {
    if (!(d.ratio > 0)) continue;
    log_sum += std::log(d.ratio);
    ++n;
    s.slower = s.slower || d.slower;
  }
  s.geomean = n ? std::exp(log_sum / n) : 1;
  return s;
}

size_t choose_variant(const std::vector<std::vector<Score>>& scores_per_variant) {
  if (scores_per_variant.empty()) return 0;
  std::optional<size_t> best;
  double best_g = 0;
  for (size_t v = 0; v < scores_per_variant.size(); ++v) {
    bool slower = false;
    double log_sum = 0;
    for (const auto& s : scores_per_variant[v]) {
      slower = slower || s.slower;
      log_sum += std::log(s.geomean);
    }
    if (slower) continue;
    const double g = scores_per_variant[v].empty() ? 1 : std::exp(log_sum / static_cast<double>(scores_per_variant[v].size()));
    if (!best || g > best_g) {
      best = v;
      best_g = g;
    }
  }
  return best.value_or(scores_per_variant.size() - 1);
}

Bundle merge_and_verify(const std::vector<Contribution>& contributions, const MergeOptions& options) {
  Bundle out;
  const auto conflicting = conflicts(contributions);
  // The lines every variant shares, in the order the studies want them.
  EnvVars base;
  for (const auto& c : contributions) {
    for (const auto& [var, value] : c.vars) {
      auto line = std::find_if(out.env.begin(), out.env.end(), [&](const EnvLine& l) { return l.var == var; });
      if (line != out.env.end()) {
        if (line->value == value) line->from.push_back(c.study->best.space);
        continue;
      }
      EnvLine l;
      l.var = var;
      l.value = value;
      l.from = {c.study->best.space};
      l.is_file = std::any_of(c.files.begin(), c.files.end(), [&](const auto& f) {
        return fs::path(value).filename() == f.first;
      });
      const std::string why = single_node_only(var, value);
      if (!why.empty()) {
        l.left_out = true;
        l.why = why;
        out.notes.push_back(fmt::format("{} (from {}) is written commented out: {}", var, c.study->best.space, why));
      }
      out.env.push_back(l);
      if (!l.left_out && !conflicting.count(var)) base.emplace_back(var, value);
    }
    for (const auto& [var, value] : c.pinned) {
      out.notes.push_back(fmt::format("{}={} is {}'s measurement context, not exported: its other values were tuned "
                                      "under it",
                                      var, value, c.study->best.space));
    }
  }

  const DeliveryRegistry& clients = DeliveryRegistry::instance();
  // Opens a study's client and measures the given environments against its defaults.
  auto measure = [&](const Contribution& c, const std::vector<std::pair<std::string, EnvVars>>& envs,
                     BundleDelivery& why) -> std::optional<std::vector<std::map<uint64_t, Delivered>>> {
    const BestTable& b = c.study->best;
    const DeliveryClient* client = clients.find(b.kernel);
    if (!client) {
      why.why = fmt::format("kernel {} has no plain client", b.kernel);
      return std::nullopt;
    }
    auto session = client->open(c.study->study);
    if (!session) {
      why.why = session.error().message;
      return std::nullopt;
    }
    BestTable bt = b;
    bt.study = c.study->study;
    const DeliveryArm defaults = defaults_arm(bt);
    std::vector<DeliveryArm> arms;
    for (const auto& [name, env] : envs) {
      EnvVars e = env;
      for (const auto& [var, value] : c.pinned) set_var(e, var, value);
      arms.push_back(DeliveryArm{name, e, b.plan.job});
    }
    std::vector<uint64_t> sizes;
    for (const auto& s : b.sizes) sizes.push_back(s.bytes);
    VerifyOptions vo;
    vo.rounds = std::max(2, options.rounds);
    if (options.progress) {
      vo.progress = [&](int done, int total) {
        options.progress(fmt::format("measuring the bundle through {}'s client: run {}/{}", b.space, done, total));
      };
    }
    auto m = compare_arms(**session, defaults, arms, sizes, vo);
    if (!m) {
      why.why = m.error().message;
      return std::nullopt;
    }
    if (cancel_requested()) {
      why.why = "cancelled";
      return std::nullopt;
    }
    return *m;
  };

  std::map<const Contribution*, BundleDelivery> delivered;
  EnvVars chosen_conflict_values;
  if (!conflicting.empty()) {
    const auto variants = conflict_variants(contributions, conflicting);
    std::vector<std::pair<std::string, EnvVars>> envs;
    for (const auto& [name, vars] : variants) {
      EnvVars e = base;
      for (const auto& [var, value] : vars) set_var(e, var, value);
      envs.emplace_back(name, e);
    }
    std::vector<std::vector<Score>> scores(variants.size());
    std::vector<std::string> readers;
    std::map<const Contribution*, std::vector<std::map<uint64_t, Delivered>>> per_reader;
    for (const auto& c : contributions) {
      bool r = false;
      for (const auto& [var, w] : conflicting) r = r || reads(c, var);
      if (!r || cancel_requested()) continue;
      BundleDelivery d;
      d.study = c.study->best.space;
      auto m = measure(c, envs, d);
      if (!m) {
        delivered[&c] = d;
        continue;
      }
      readers.push_back(d.study);
      per_reader[&c] = *m;
      for (size_t v = 0; v < variants.size(); ++v) scores[v].push_back(score_of((*m)[v]));
    }
    const size_t pick = choose_variant(scores);
    chosen_conflict_values = variants[pick].second;
    for (auto& [c, m] : per_reader) {
      BundleDelivery d;
      d.study = c->study->best.space;
      d.state = "measured";
      d.sizes = m[pick];
      delivered[c] = d;
    }
    for (const auto& [var, w] : conflicting) {
      std::vector<std::string> wanted;
      for (const auto& x : w) wanted.push_back(fmt::format("{} wanted {}", x.study, x.value));
      std::vector<std::string> figures;
      for (size_t v = 0; v < variants.size(); ++v) {
        double log_sum = 0;
        bool slower = false;
        for (const auto& s : scores[v]) {
          log_sum += std::log(s.geomean);
          slower = slower || s.slower;
        }
        figures.push_back(fmt::format("{} {:.2f}x{}", variants[v].first,
                                      scores[v].empty() ? 1.0 : std::exp(log_sum / static_cast<double>(scores[v].size())),
                                      slower ? " (slower somewhere)" : ""));
      }
      const auto kept = std::find_if(chosen_conflict_values.begin(), chosen_conflict_values.end(),
                                     [&](const auto& kv) { return kv.first == var; });
      out.notes.push_back(fmt::format("{}: {}; kept {}: {} measured best across {} (geometric mean over sizes and "
                                      "studies: {})",
                                      var, join(wanted, ", "),
                                      kept == chosen_conflict_values.end() ? "the library's own value" : kept->second,
                                      variants[pick].first, readers.empty() ? "no study (none could measure)" : join(readers, ", "),
                                      join(figures, "; ")));
      for (auto& l : out.env) {
        if (l.var != var) continue;
        if (kept == chosen_conflict_values.end()) {
          l.left_out = true;
          l.why = "left to the library: no study's value measured best across the studies that read it";
        } else {
          l.value = kept->second;
          l.from.clear();
          for (const auto& x : w) {
            if (x.value == kept->second) l.from.push_back(x.study);
          }
          l.why = "the value that measured best across " + join(readers, ", ");
        }
      }
    }
  }

  // The merged environment, measured through every other study's client.
  EnvVars merged = base;
  for (const auto& [var, value] : chosen_conflict_values) set_var(merged, var, value);
  for (const auto& c : contributions) {
    if (delivered.count(&c) || cancel_requested()) continue;
    BundleDelivery d;
    d.study = c.study->best.space;
    bool loads = !c.study->best.plan.job_is_default;
    for (const auto& [var, value] : merged) loads = loads || reads(c, var);
    if (!loads) {
      d.why = "the bundle sets nothing its job reads";
    } else if (auto m = measure(c, {{"bundle", merged}}, d)) {
      d.state = "measured";
      d.sizes = (*m)[0];
    }
    delivered[&c] = d;
  }
  // A study slower under the merged bundle at some size: its own lines leave the bundle (a line
  // another study also wanted stays when that study is not slower with it).
  std::map<std::string, std::string> slower_studies;  // space -> the figure
  for (const auto& c : contributions) {
    auto it = delivered.find(&c);
    if (it == delivered.end()) continue;
    out.delivered.push_back(it->second);
    for (const auto& [bytes, d] : it->second.sizes) {
      if (d.slower) {
        const std::string figure = fmt::format("{} under the merged bundle is {} its defaults at {}", it->second.study,
                                               interval(d.ratio, d.ci_low, d.ci_high), format_bytes(bytes));
        out.notes.push_back(figure);
        slower_studies.emplace(it->second.study, figure);
      }
    }
  }
  for (auto& l : out.env) {
    if (l.left_out || l.from.empty()) continue;
    const bool kept_by_another = std::any_of(l.from.begin(), l.from.end(), [&](const std::string& s) {
      const bool measured = std::any_of(out.delivered.begin(), out.delivered.end(),
                                        [&](const BundleDelivery& d) { return d.study == s && d.state == "measured"; });
      return measured && !slower_studies.count(s);
    });
    const auto slow = std::find_if(l.from.begin(), l.from.end(), [&](const std::string& s) { return slower_studies.count(s); });
    if (slow == l.from.end() || kept_by_another) continue;
    l.left_out = true;
    l.why = "left out: " + slower_studies[*slow];
    out.notes.push_back(fmt::format("{} is written commented out: {}", l.var, slower_studies[*slow]));
  }
  // Each line's comment: who wanted it and what they gain.
  for (auto& l : out.env) {
    std::vector<std::string> parts;
    for (const auto& s : l.from) {
      const auto c = std::find_if(contributions.begin(), contributions.end(),
                                  [&](const Contribution& x) { return x.study->best.space == s; });
      std::string text = s;
      if (c != contributions.end()) {
        text += " (" + c->gain;
        for (const auto& d : out.delivered) {
          if (d.study == s) text += "; " + delivered_line(d);
        }
        text += ")";
      }
      parts.push_back(text);
    }
    const std::string from = "from " + join(parts, "; ");
    l.why = l.why.empty() ? from : from + "; " + l.why;
  }
  return out;
}

std::string env_file_text(const Bundle& bundle, const std::string& header) {
  std::string out = header;
  out += "# Load: BUNDLE/job.sh COMMAND [ARGS...], or `set -a; . ./acceltune.env; set +a` in a shell.\n";
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
