// The definitions behind tuner/verify.hpp: delivered certification.
#include "tuner/verify.hpp"

#include <cmath>
#include <cstdlib>

#include "tuner/cancel.hpp"
#include "tuner/certify.hpp"
#include "tuner/delivery.hpp"
#include "tuner/plan.hpp"
#include "tuner/store.hpp"
#include "tuner/verdict.hpp"

namespace acceltune {

namespace {


void diff(const Json& a, const Json& b, const std::string& path, std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      diff(v, b.contains(k) ? b[k] : Json(nullptr), path.empty() ? k : path + "." + k, out);
    }
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) out.push_back(fmt::format("{}: absent -> {}", path.empty() ? k : path + "." + k, v.dump()));
    }
    return;
  }
  if (a != b) out.push_back(fmt::format("{}: {} -> {}", path, a.is_null() ? "absent" : a.dump(), b.is_null() ? "absent" : b.dump()));
}

}  // namespace

std::vector<std::string> fingerprint_drift(const Json& stored, const Json& now) {
  std::vector<std::string> out;
  const Json a = stored.is_object() ? stored.value("fingerprint_fields", Json::object()) : Json::object();
  const Json b = now.is_object() ? now.value("fingerprint_fields", Json::object()) : Json::object();
  diff(a, b, "", out);
  return out;
}

namespace {

#if ACCELTUNE_TEST_SEAMS
// Test seam (builds with ACCELTUNE_TEST_SEAMS only): ACCELTUNE_TEST_SCRIPTED_DELIVERY=RATIO makes
// every family's plain client a scripted one whose arms run RATIO times the defaults at every size (1% of deterministic jitter per run), so the verdict and what follows from it (fallbacks,
// exports, the settings script) are tested with an outcome known in advance.
class ScriptedDelivery final : public DeliverySession {
 public:
  explicit ScriptedDelivery(double ratio) : ratio_(ratio) {}
  Expected<std::map<uint64_t, double>> measure(const DeliveryArm& arm, const std::vector<uint64_t>& sizes) override {
    ++runs_;
    const double jitter = 1.0 + 0.01 * static_cast<double>((runs_ * 7) % 5 - 2) / 2.0;
    std::map<uint64_t, double> out;
    for (uint64_t b : sizes) out[b] = 100.0 * jitter * (arm.name == "defaults" ? 1.0 : ratio_);
    return out;
  }

 private:
  double ratio_;
  int runs_ = 0;
};

std::unique_ptr<DeliverySession> scripted_delivery() {
  const char* r = std::getenv("ACCELTUNE_TEST_SCRIPTED_DELIVERY");
  if (!r || !*r) return nullptr;
  const double ratio = std::atof(r);
  return ratio > 0 ? std::make_unique<ScriptedDelivery>(ratio) : nullptr;
}
#else
std::unique_ptr<DeliverySession> scripted_delivery() { return nullptr; }
#endif

bool plan_is_default(const BestTable& best) {
  if (!best.plan.job_is_default) return false;
  for (const auto& s : best.sizes) {
    if (!s.chosen_is_default) return false;
  }
  return true;
}

}  // namespace

void fall_back_to_defaults(BestTable& best, const std::string& why) {
  best.plan.notes.push_back(why);
  best.plan.job = job_part(best.default_config, best.plan.scopes);
  best.plan.job_is_default = true;
  for (auto& s : best.sizes) {
    s.chosen_config = best.default_config;
    s.chosen_is_default = true;
  }
  finish_ranges(best);
}

std::map<uint64_t, Json> plan_b_choices(const BestTable& best, const Space& space, const std::vector<Trial>& trials) {
  std::map<uint64_t, Json> out;
  const Json job = job_part(best.default_config, best.plan.scopes);
  for (const auto& s : best.sizes) {
    const auto ts = trials_with_job(space, trials, s.bytes, job, best.plan.scopes, nullptr);
    if (ts.empty()) continue;
    const Json config = space.config_to_json(ts.front()->config);
    if (config != best.default_config) out[s.bytes] = config;
  }
  return out;
}

bool adopt_plan_b(BestTable& best, const std::map<uint64_t, Json>& choices) {
  if (!best.plan.job_is_default || choices.empty()) return false;
  std::vector<std::string> sizes;
  for (auto& s : best.sizes) {
    const auto it = choices.find(s.bytes);
    if (it == choices.end()) continue;
    s.chosen_config = it->second;
    s.chosen_is_default = false;
    sizes.push_back(format_bytes(s.bytes));
  }
  if (sizes.empty()) return false;
  best.plan.notes.push_back(fmt::format("instead: the library's own job-wide part with the search's best per-size "
                                        "choices under it at {} (not certified; the delivered verdict decides)",
                                        join(sizes, ", ")));
  finish_ranges(best);
  return true;
}

bool apply_delivered_fallback(BestTable& best) {
  const bool judged = !best.delivery.verdict.empty();
  const Verdict verdict = verdict_from_string(best.delivery.verdict);
  if (judged && verdict == Verdict::ships) return false;
  if (plan_is_default(best)) return false;
  const std::string verdict_text =
      fmt::format("the plan's verdict was '{}' ({})", best.delivery.verdict, best.delivery.verdict_why);
  if (judged && verdict == Verdict::fails) {
    fall_back_to_defaults(best, verdict_text + ": falls back to the library defaults");
    return true;
  }
  const double margin = VerdictRule{}.margin;
  bool changed = false;
  std::string whole;
  const Json base = with_job(best.default_config, best.plan.job);
  for (auto& s : best.sizes) {
    if (!s.delivered) continue;
    const Delivered& d = *s.delivered;
    if (!d.slower && !(judged && !(d.ci_low > margin))) continue;
    const std::string figure = fmt::format("{:.2f}x [{:.2f}, {:.2f}]", d.ratio, d.ci_low, d.ci_high);
    const std::string against = d.slower ? "the defaults" : fmt::format("(not shown above {:.2f}x of) the defaults", margin);
    if (s.chosen_config != base) {
      best.plan.notes.push_back(fmt::format("at {} the per-size choice delivered {} {}: falls back to the "
                                            "library's own choice there",
                                            format_bytes(s.bytes), figure, against));
      s.chosen_config = base;
      s.chosen_is_default = base == best.default_config;
      changed = true;
    } else if (!best.plan.job_is_default && whole.empty()) {
      whole = fmt::format("the job-wide part {} delivered {} {} at {}: falls back to the library defaults",
                          best.plan.job.dump(), figure, against, format_bytes(s.bytes));
    }
  }
  if (!whole.empty()) {
    fall_back_to_defaults(best, whole);
    return true;
  }
  if (!changed && judged) {
    // Nothing per size to drop, and still no proof it pays: a plan ships only when it is proven.
    fall_back_to_defaults(best, verdict_text + ": falls back to the library defaults");
    return true;
  }
  if (changed) finish_ranges(best);
  return changed;
}

Expected<std::unique_ptr<DeliverySession>> open_delivery(const DeliveryClient& client, const Json& study,
                                                         std::string* described) {
  if (auto scripted = scripted_delivery()) {
    if (described) *described = "a scripted client (test seam)";
    return scripted;
  }
  if (described) *described = client.description;
  return client.open(study);
}

DeliveryArm defaults_arm(const BestTable& best) {
  return DeliveryArm{"defaults", pinned_env(best.study), job_part(best.default_config, best.plan.scopes)};
}

Expected<std::vector<std::map<uint64_t, Delivered>>> compare_arms(DeliverySession& session, const DeliveryArm& defaults,
                                                                  const std::vector<DeliveryArm>& arms,
                                                                  const std::vector<uint64_t>& sizes,
                                                                  const VerifyOptions& options, RoundValues* raw,
                                                                  std::string* arm_failure) {
  // values[0]: the defaults; values[k + 1]: arms[k].
  RoundValues values(arms.size() + 1);
  const int n = static_cast<int>(arms.size()) + 1;
  const int rounds = std::max(1, options.rounds);
  const int cap = std::max(rounds, options.max_rounds);
  int done = 0;
  double last_round = 0;  // seconds the previous round took
  for (int r = 0; r < cap && !cancel_requested(); ++r) {
    if (!round_may_start(options.deadline, r, last_round)) break;
    const auto round_start = std::chrono::steady_clock::now();
    for (int k = 0; k < n && !cancel_requested(); ++k) {
      // Round r starts at arm r mod n: with one arm, defaults first in even rounds, the plan in odd.
      const int which = (r + k) % n;
      const DeliveryArm& arm = which == 0 ? defaults : arms[which - 1];
      auto m = session.measure(arm, sizes);
      if (!m && (which == 0 || !arm_failure)) {
        return runtime_error("{} arm of the delivered comparison: {}", arm.name, m.error().message);
      }
      if (!m && arm_failure->empty()) *arm_failure = fmt::format("{}: {}", arm.name, m.error().message);
      for (uint64_t b : sizes) {
        const auto it = m ? m->find(b) : std::map<uint64_t, double>::const_iterator{};
        values[which][b].push_back(!m || it == m->end() ? std::nan("") : it->second);
      }
      if (options.progress) options.progress(++done, n * (r + 1 < rounds ? rounds : r + 1));
    }
    last_round = std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
    if (r + 1 >= rounds && options.enough && !cancel_requested() && options.enough(values)) break;
  }
  if (raw) *raw = values;
  std::vector<std::map<uint64_t, Delivered>> out(arms.size());
  for (size_t a = 0; a < arms.size(); ++a) {
    for (uint64_t b : sizes) {
      const RatioInterval ri = ratio_interval(values[a + 1][b], values[0][b]);
      if (ri.n == 0) continue;
      Delivered d;
      d.ratio = ri.ratio;
      d.ci_low = ri.low;
      d.ci_high = ri.high;
      d.rounds = ri.n;
      d.value = median_of(values[a + 1][b]);
      d.default_value = median_of(values[0][b]);
      d.slower = ri.n >= 2 && ri.high < 1.0;
      d.faster = ri.n >= 2 && ri.low > 1.0;
      out[a][b] = d;
    }
  }
  return out;
}

bool delivery_pays(const BestTable& best) {
  if (best.delivery.state == "measured" && !best.delivery.verdict.empty()) {
    return verdict_from_string(best.delivery.verdict) == Verdict::ships;
  }
  for (const auto& s : best.sizes) {
    if (s.delivered && s.delivered->slower) return false;
  }
  return true;
}

std::set<uint64_t> sizes_loading_the_defaults(const BestTable& best) {
  std::set<uint64_t> out;
  if (best.plan.job != job_part(best.default_config, best.plan.scopes)) return out;
  for (const auto& s : best.sizes) {
    if (s.chosen_config == best.default_config) out.insert(s.bytes);
  }
  return out;
}

Status verify_delivery(BestTable& best, const VerifyOptions& options) {
  for (auto& s : best.sizes) s.delivered.reset();
  best.delivery = Delivery{};
  const DeliveryClient* client = DeliveryRegistry::instance().find(best.kernel);
  if (!client) {
    best.delivery.why = fmt::format("kernel {} has no plain client: no job loads its params the way a library does",
                                    best.kernel);
    return {};
  }
  ACCELTUNE_TRY_ASSIGN(PlanEnv pe, plan_env(best));
  const std::vector<std::pair<std::string, std::string>> pinned = pinned_env(best.study);
  const DeliveryArm defaults = defaults_arm(best);
  // Measured on the study's own path, so with what the plan holds back from other paths.
  DeliveryArm plan{"plan", own_path_env(pe), best.plan.job};
  bool loads = best.plan.job != defaults.job;
  for (const auto& kv : plan.env) {
    if (std::find(pinned.begin(), pinned.end(), kv) == pinned.end()) loads = true;
  }
  // The client first: a missing tool is worth knowing even when this plan needs no measurement.
  std::string client_text;
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<DeliverySession> session, open_delivery(*client, best.study, &client_text));
  if (!loads) {
    best.delivery.why = "the plan is the library's defaults: a job loads nothing from it";
    return {};
  }
  ACCELTUNE_TRY(write_plan_files(best));
  std::vector<uint64_t> sizes;
  for (const auto& s : best.sizes) sizes.push_back(s.bytes);
  VerifyOptions o = options;
  o.rounds = std::max(2, options.rounds);
  VerdictRule rule;
  rule.min_rounds = o.rounds;
  rule.max_rounds = std::max(o.rounds, options.max_rounds > 0 ? options.max_rounds : rule.max_rounds);
  o.max_rounds = rule.max_rounds;
  rule.same_as_defaults = sizes_loading_the_defaults(best);
  o.enough = [&rule](const RoundValues& v) { return judge_plan(v[1], v[0], rule, false).decided; };
  RoundValues raw;
  std::string failure;
  ACCELTUNE_TRY_ASSIGN(auto measured, compare_arms(*session, defaults, {plan}, sizes, o, &raw, &failure));
  if (cancel_requested()) return runtime_error("cancelled by {} while verifying", signal_name(cancel_signal()));
  for (auto& s : best.sizes) {
    const auto it = measured[0].find(s.bytes);
    if (it != measured[0].end()) s.delivered = it->second;
  }
  const Judgement j = judge_plan(raw[1], raw[0], rule, true);
  size_t rounds = 0;
  for (const auto& [b, v] : raw[0]) rounds = std::max(rounds, v.size());
  const bool cut = deadline_passed(o.deadline) && static_cast<int>(rounds) < rule.max_rounds &&
                   !judge_plan(raw[1], raw[0], rule, false).decided;
  best.delivery.state = "measured";
  best.delivery.client = client_text;
  best.delivery.rounds = static_cast<int>(rounds);
  best.delivery.verdict = to_string(j.verdict);
  best.delivery.verdict_why = j.why + (j.verdict == Verdict::fails && !failure.empty() ? " (" + failure + ")" : "") +
                              (cut ? fmt::format("; the time limit ended the rounds at {} of up to {}", rounds,
                                                 rule.max_rounds)
                                   : "");
  best.delivery.at = utc_now_iso8601();
  best.delivery.fingerprint = options.fingerprint_id;
  return {};
}

Expected<DeliveredPlan> verify_and_fall_back(BestTable& best, const DeliverOptions& options) {
  DeliveredPlan out;
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<ResultStore> store, open_store("dir", best.dir));
  const int measurements = std::max(1, options.measurements);
  bool plan_b_tried = false;
  if (options.fall_back && plan_is_default(best) && adopt_plan_b(best, options.plan_b)) {
    // Certification left the defaults (no significant gain in its rounds): the search's per-size
    // choices under the library's own job-wide part are measured instead; the verdict decides.
    plan_b_tried = true;
    ACCELTUNE_TRY(write_plan_files(best));
    ACCELTUNE_TRY(store->write_best(best.to_json()));
  }
  for (int pass = 0; pass < measurements; ++pass) {
    if (pass > 0 && deadline_passed(options.verify.deadline)) {
      // The changed plan cannot be measured again in time: what is exported is never unproven.
      fall_back_to_defaults(best, "the time limit left no time to measure the changed plan again: falls back to the "
                                  "library defaults");
      ACCELTUNE_TRY(write_plan_files(best));
      ACCELTUNE_TRY(store->write_best(best.to_json()));
      out.verdict = PlanVerdict::fell_back_to_defaults;
      out.why = "the time limit left no time to measure the changed plan again";
      out.out_of_time = true;
      ++out.fallbacks;
      return out;
    }
    ACCELTUNE_TRY(verify_delivery(best, options.verify));
    ACCELTUNE_TRY(store->write_best(best.to_json()));
    ++out.measurements;
    if (options.on_measured) options.on_measured(best);
    if (best.delivery.state != "measured") {
      out.verdict = PlanVerdict::not_verified;
      out.why = best.delivery.why;
      return out;
    }
    out.why = best.delivery.verdict_why;
    if (delivery_pays(best)) {
      out.verdict = PlanVerdict::pays;
      return out;
    }
    out.verdict = PlanVerdict::no_longer_pays;
    if (!options.fall_back) return out;
    if (verdict_from_string(best.delivery.verdict) == Verdict::fails) {
      // A plan that breaks the job is never exported: no second chance for it.
      std::string vars;
      if (auto pe = plan_env(best)) {
        for (const auto& [var, value] : own_path_env(*pe)) vars += (vars.empty() ? "" : " ") + var + "=" + value;
      }
      out.why = best.delivery.verdict_why + (vars.empty() ? "" : "; the plan set " + vars);
      fall_back_to_defaults(best, "the plan's job failed: " + out.why + ": falls back to the library defaults");
      ACCELTUNE_TRY(write_plan_files(best));
      ACCELTUNE_TRY(store->write_best(best.to_json()));
      ++out.fallbacks;
      out.verdict = PlanVerdict::job_failed;
      return out;
    }
    const bool again = pass + 1 < measurements;
    if (again) {
      const bool job_was_set = !best.plan.job_is_default;
      if (!apply_delivered_fallback(best)) return out;
      // The job-wide part went back to the library's: its per-size choices may still pay.
      if (job_was_set && !plan_b_tried && plan_is_default(best)) plan_b_tried = adopt_plan_b(best, options.plan_b);
    } else {
      // The last measurement did not prove it: what is exported is the defaults, never unproven.
      fall_back_to_defaults(best, fmt::format("after {} delivered measurements the plan's verdict was still '{}' ({}): "
                                              "falls back to the library defaults",
                                              out.measurements, best.delivery.verdict, best.delivery.verdict_why));
      out.verdict = PlanVerdict::fell_back_to_defaults;
    }
    ACCELTUNE_TRY(write_plan_files(best));
    ACCELTUNE_TRY(store->write_best(best.to_json()));
    ++out.fallbacks;
    if (options.on_fallback) options.on_fallback(again);
  }
  return out;
}

}  // namespace acceltune
