// The bring-up bundle's merge: one environment from every study's plan, conflicts settled by
// measurement, and the merged environment measured through every study's plain client.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "tools/bringup/bundle.hpp"
#include "tuner/cancel.hpp"
#include "tuner/delivery.hpp"

namespace acceltune::bringup {
namespace {

namespace fs = std::filesystem;

void set_var(EnvVars& env, const std::string& var, const std::string& value) {
  for (auto& kv : env) {
    if (kv.first == var) {
      kv.second = value;
      return;
    }
  }
  env.emplace_back(var, value);
}

// The merged bundle's figures for a study, one line: its best size, or why none.
std::string delivered_line(const BundleDelivery& d) {
  if (d.state != "measured") return "in the bundle: not verified (" + d.why + ")";
  const std::string text = delivered_range_text(d.sizes);
  return "in the bundle: " + (text.empty() ? std::string("no size measured") : "delivered " + text);
}

}  // namespace

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

namespace {

using Measured = std::vector<std::map<uint64_t, Delivered>>;

constexpr const char* kNoTime = "the time limit left no time to measure it";
constexpr int kMergePasses = 3;  // measurements of the bundle, the first included
using Deliveries = std::map<const Contribution*, BundleDelivery>;

// The bundle's lines, in the order the studies want them; returns the lines every variant shares.
EnvVars collect_lines(const std::vector<Contribution>& contributions,
                      const std::map<std::string, std::vector<Wish>>& conflicting, Bundle& out) {
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
  return base;
}

// Opens a study's client and measures the given environments against its defaults; on failure
// says why in `why` and returns nothing. With `arm_may_fail`, a job that fails under an
// environment is `why.failed` (what the defaults measured is kept) rather than an error.
std::optional<Measured> measure(const Contribution& c, const std::vector<std::pair<std::string, EnvVars>>& envs,
                                const MergeOptions& options, BundleDelivery& why, bool arm_may_fail = false) {
  const BestTable& b = c.study->best;
  const DeliveryClient* client = DeliveryRegistry::instance().find(b.kernel);
  if (!client) {
    why.why = fmt::format("kernel {} has no plain client", b.kernel);
    return std::nullopt;
  }
  if (deadline_passed(options.deadline)) {
    why.why = kNoTime;
    why.out_of_time = true;
    return std::nullopt;
  }
  auto session = open_delivery(*client, c.study->study);
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
  vo.deadline = options.deadline;
  if (options.progress) {
    vo.progress = [&](int done, int total) {
      options.progress(fmt::format("measuring the bundle through {}'s client: run {}/{}", b.space, done, total));
    };
  }
  std::string failure;
  RoundValues raw;
  auto m = compare_arms(**session, defaults, arms, sizes, vo, &raw, arm_may_fail ? &failure : nullptr);
  if (m && arm_may_fail) {
    // A size the defaults measured and an environment never did: its job failed there.
    const auto finite = [](const std::vector<double>& v) { return std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }); };
    for (size_t k = 1; k < raw.size() && failure.empty(); ++k) {
      for (uint64_t s : sizes) {
        if (finite(raw[0][s]) && !finite(raw[k][s])) {
          failure = fmt::format("no run measured {} with the {} (the defaults did)", format_bytes(s), arms[k - 1].name);
          break;
        }
      }
    }
  }
  if (m && !failure.empty()) {
    why.failed = true;
    why.why = failure;
    return std::nullopt;
  }
  if (!m) {
    why.why = m.error().message;
    return std::nullopt;
  }
  if (cancel_requested()) {
    why.why = "cancelled";
    return std::nullopt;
  }
  return *m;
}

// The geometric mean of a variant's scores, and whether any of them was slower.
std::pair<double, bool> overall(const std::vector<Score>& scores) {
  double log_sum = 0;
  bool slower = false;
  for (const auto& s : scores) {
    log_sum += std::log(s.geomean);
    slower = slower || s.slower;
  }
  return {scores.empty() ? 1.0 : std::exp(log_sum / static_cast<double>(scores.size())), slower};
}

// One conflicting variable settled: the note that says what each study wanted and what measured
// best, and its line set to the kept value (or left to the library).
void settle_line(const std::string& var, const std::vector<Wish>& w, const EnvVars& chosen,
                 const std::vector<std::pair<std::string, EnvVars>>& variants, size_t pick,
                 const std::vector<std::vector<Score>>& scores, const std::vector<std::string>& readers, Bundle& out) {
  std::vector<std::string> wanted;
  for (const auto& x : w) wanted.push_back(fmt::format("{} wanted {}", x.study, x.value));
  std::vector<std::string> figures;
  for (size_t v = 0; v < variants.size(); ++v) {
    const auto [g, slower] = overall(scores[v]);
    figures.push_back(fmt::format("{} {:.2f}x{}", variants[v].first, g, slower ? " (slower somewhere)" : ""));
  }
  const auto kept = std::find_if(chosen.begin(), chosen.end(), [&](const auto& kv) { return kv.first == var; });
  out.notes.push_back(fmt::format("{}: {}; kept {}: {} measured best across {} (geometric mean over sizes and "
                                  "studies: {})",
                                  var, join(wanted, ", "), kept == chosen.end() ? "the library's own value" : kept->second,
                                  variants[pick].first, readers.empty() ? "no study (none could measure)" : join(readers, ", "),
                                  join(figures, "; ")));
  for (auto& l : out.env) {
    if (l.var != var) continue;
    if (kept == chosen.end()) {
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

// Conflicting variables settled by measuring each study's values, and the library's own, through
// every study that reads them; returns the values kept.
EnvVars settle_conflicts(const std::vector<Contribution>& contributions,
                         const std::map<std::string, std::vector<Wish>>& conflicting, const EnvVars& base,
                         const MergeOptions& options, Bundle& out, Deliveries& delivered) {
  if (conflicting.empty()) return {};
  const auto variants = conflict_variants(contributions, conflicting);
  std::vector<std::pair<std::string, EnvVars>> envs;
  for (const auto& [name, vars] : variants) {
    EnvVars e = base;
    for (const auto& [var, value] : vars) set_var(e, var, value);
    envs.emplace_back(name, e);
  }
  std::vector<std::vector<Score>> scores(variants.size());
  std::vector<std::string> readers;
  std::map<const Contribution*, Measured> per_reader;
  for (const auto& c : contributions) {
    bool r = false;
    for (const auto& [var, w] : conflicting) r = r || reads(c, var);
    if (!r || cancel_requested()) continue;
    BundleDelivery d;
    d.study = c.study->best.space;
    auto m = measure(c, envs, options, d);
    if (!m) {
      delivered[&c] = d;
      continue;
    }
    readers.push_back(d.study);
    per_reader[&c] = *m;
    for (size_t v = 0; v < variants.size(); ++v) scores[v].push_back(score_of((*m)[v]));
  }
  const size_t pick = choose_variant(scores);
  for (auto& [c, m] : per_reader) {
    BundleDelivery d;
    d.study = c->study->best.space;
    d.state = "measured";
    d.sizes = m[pick];
    delivered[c] = d;
  }
  for (const auto& [var, w] : conflicting) settle_line(var, w, variants[pick].second, variants, pick, scores, readers, out);
  return variants[pick].second;
}

// The bundle's environment as it stands: its lines not left out.
EnvVars merged_env(const Bundle& out) {
  EnvVars env;
  for (const auto& l : out.env) {
    if (!l.left_out) env.emplace_back(l.var, l.value);
  }
  return env;
}

// The studies the bundle fails, each with why: a size slower than its defaults, its job failing
// under the bundle, or no proof at all (not measured under the bundle for lack of time, and its
// own plan did not ship).
std::map<std::string, std::string> offenders(const std::vector<Contribution>& contributions, const Deliveries& delivered) {
  std::map<std::string, std::string> out;  // space -> why
  for (const auto& c : contributions) {
    auto it = delivered.find(&c);
    if (it == delivered.end()) continue;
    const BundleDelivery& bd = it->second;
    if (bd.failed) out.emplace(bd.study, fmt::format("{}'s job failed under the merged bundle: {}", bd.study, bd.why));
    for (const auto& [bytes, d] : bd.sizes) {
      if (d.slower && !out.count(bd.study)) {
        out.emplace(bd.study, fmt::format("{} under the merged bundle is {} its defaults at {}", bd.study,
                                          gain_interval_text(d.ratio, d.ci_low, d.ci_high), format_bytes(bytes)));
      }
    }
    if (bd.out_of_time && c.study->best.delivery.verdict != "ships") {
      out.emplace(bd.study, bd.study + " was not measured, under the bundle or alone: " + kNoTime);
    }
  }
  return out;
}

// The offenders' own lines commented out; a line another study also wanted stays when that study
// was measured under the bundle and does not offend. Returns how many lines left.
int drop_own_lines(const std::map<std::string, std::string>& offending, const Deliveries& delivered, Bundle& out) {
  int dropped = 0;
  for (auto& l : out.env) {
    if (l.left_out || l.from.empty()) continue;
    const bool kept_by_another = std::any_of(l.from.begin(), l.from.end(), [&](const std::string& s) {
      const bool measured = std::any_of(delivered.begin(), delivered.end(), [&](const auto& kv) {
        return kv.second.study == s && kv.second.state == "measured";
      });
      return measured && !offending.count(s);
    });
    const auto bad = std::find_if(l.from.begin(), l.from.end(), [&](const std::string& s) { return offending.count(s); });
    if (bad == l.from.end() || kept_by_another) continue;
    l.left_out = true;
    l.why = "left out: " + offending.at(*bad);
    out.notes.push_back(fmt::format("{} is written commented out: {}", l.var, offending.at(*bad)));
    ++dropped;
  }
  return dropped;
}

// The last resort: every line an offending study's job reads is commented out, so the bundle
// loads nothing into that family's jobs.
void drop_family_lines(const std::map<std::string, std::string>& offending, const std::vector<Contribution>& contributions,
                       int passes, Bundle& out) {
  for (const auto& c : contributions) {
    const auto why = offending.find(c.study->best.space);
    if (why == offending.end()) continue;
    for (auto& l : out.env) {
      if (l.left_out || !reads(c, l.var)) continue;
      l.left_out = true;
      l.why = fmt::format("left out: {}, after {} measurement{} of the bundle{}: its family takes nothing from it",
                          why->second, passes, passes == 1 ? "" : "s",
                          passes < kMergePasses ? " with no line of its own left to remove" : "");
      out.notes.push_back(fmt::format("{} is written commented out: {}", l.var, l.why.substr(10)));
    }
  }
}

// Each line's comment: who wanted it and what they gain.
void comment_lines(const std::vector<Contribution>& contributions, Bundle& out) {
  for (auto& l : out.env) {
    std::vector<std::string> parts;
    for (const auto& s : l.from) {
      const auto c = std::find_if(contributions.begin(), contributions.end(),
                                  [&](const Contribution& x) { return x.study->best.space == s; });
      std::string text = s;
      if (c != contributions.end()) {
        const Delivery& own = c->study->best.delivery;
        text += " (its own plan: " +
                (own.verdict.empty() ? std::string("not verified") : "verdict '" + own.verdict + "'") + "; " + c->gain;
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
}

// One measurement of the merged bundle through the client of every study it loads something into;
// `skip` holds the studies already measured under it.
void measure_merged(const std::vector<Contribution>& contributions, const MergeOptions& options, const Bundle& out,
                    const std::set<const Contribution*>& skip, Deliveries& delivered) {
  const EnvVars merged = merged_env(out);
  for (const auto& c : contributions) {
    if (skip.count(&c) || cancel_requested()) continue;
    BundleDelivery d;
    d.study = c.study->best.space;
    bool loads = !c.study->best.plan.job_is_default;
    for (const auto& [var, value] : merged) loads = loads || reads(c, var);
    if (!loads && delivered.count(&c)) continue;  // its lines left: the measurement that removed them stays
    if (!loads) {
      d.why = "the bundle sets nothing its job reads";
    } else if (auto m = measure(c, {{"bundle", merged}}, options, d, /*arm_may_fail=*/true)) {
      d.state = "measured";
      d.sizes = (*m)[0];
    }
    delivered[&c] = d;
  }
}

}  // namespace

void leave_out_unmeasured_paths(Bundle& out, const std::map<std::string, std::string>& family_of_space,
                                const std::set<std::string>& measured) {
  for (auto& l : out.env) {
    if (l.left_out) continue;
    for (const auto& study : l.from) {
      const auto fam = family_of_space.find(study);
      const FamilyInfo* f = fam == family_of_space.end() ? nullptr : FamilyRegistry::instance().find(fam->second);
      if (!f || !f->one_env_for_all_paths) continue;
      std::vector<std::string> unmeasured;
      for (const auto& space : f->spaces) {
        if (!measured.count(space)) unmeasured.push_back(space);
      }
      if (unmeasured.empty()) continue;
      l.left_out = true;
      l.why = fmt::format("left out: it governs {}'s path too (one {} environment for every path), which was not "
                          "measured under the bundle; uncomment it only for jobs that stay on {}'s path",
                          join(unmeasured, ", "), fam->second, study);
      out.notes.push_back(fmt::format("{} is written commented out: {}", l.var, l.why.substr(10)));
      break;
    }
  }
}

std::vector<BundleDelivery> measure_bundle(const std::vector<Contribution>& contributions, const EnvVars& env,
                                           const MergeOptions& options) {
  std::vector<BundleDelivery> out;
  for (const auto& c : contributions) {
    if (cancel_requested()) break;
    BundleDelivery d;
    d.study = c.study->best.space;
    const bool loads = std::any_of(env.begin(), env.end(), [&](const auto& kv) { return reads(c, kv.first); });
    if (!loads) {
      d.why = "the bundle sets nothing its job reads";
    } else if (auto m = measure(c, {{"bundle", env}}, options, d, /*arm_may_fail=*/true)) {
      d.state = "measured";
      d.sizes = (*m)[0];
    }
    out.push_back(std::move(d));
  }
  return out;
}

Bundle merge_and_verify(const std::vector<Contribution>& contributions, const MergeOptions& options) {
  Bundle out;
  const auto conflicting = conflicts(contributions);
  const EnvVars base = collect_lines(contributions, conflicting, out);
  Deliveries delivered;
  (void)settle_conflicts(contributions, conflicting, base, options, out, delivered);

  // The merged environment measured through every study's client; a study the bundle fails has
  // its own lines removed and the bundle is measured again, at most kMergePasses times in all;
  // a study failed still then takes nothing from the bundle.
  std::set<const Contribution*> skip;
  for (const auto& [c, d] : delivered) skip.insert(c);  // measured while settling the conflicts
  for (int pass = 1; pass <= kMergePasses && !cancel_requested(); ++pass) {
    measure_merged(contributions, options, out, skip, delivered);
    const auto offending = offenders(contributions, delivered);
    if (offending.empty()) break;
    if (pass == kMergePasses || drop_own_lines(offending, delivered, out) == 0) {
      drop_family_lines(offending, contributions, pass, out);
      break;
    }
    out.notes.push_back(fmt::format("the bundle was measured again (pass {} of at most {}) without the lines above",
                                    pass + 1, kMergePasses));
    skip.clear();
    for (const auto& [c, d] : delivered) {
      if (d.state != "measured" && !d.failed) skip.insert(c);  // nothing measured before: nothing to measure again
    }
  }
  std::map<std::string, std::string> family_of_space;
  std::set<std::string> measured;
  for (const auto& c : contributions) {
    const std::string family = family_name_of_kernel(c.study->best.kernel);
    if (!family.empty()) family_of_space[c.study->best.space] = family;
    const auto it = delivered.find(&c);
    if (it == delivered.end()) continue;
    out.delivered.push_back(it->second);
    if (it->second.state == "measured") measured.insert(it->second.study);
  }
  leave_out_unmeasured_paths(out, family_of_space, measured);
  comment_lines(contributions, out);
  return out;
}

}  // namespace acceltune::bringup
