// The definitions behind tuner/verify.hpp: delivered certification.
#include "tuner/verify.hpp"

#include <cmath>

#include "tuner/cancel.hpp"
#include "tuner/certify.hpp"
#include "tuner/delivery.hpp"
#include "tuner/plan.hpp"
#include "tuner/store.hpp"

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

bool apply_delivered_fallback(BestTable& best) {
  bool changed = false, whole = false;
  const Json base = with_job(best.default_config, best.plan.job);
  for (auto& s : best.sizes) {
    if (!s.delivered || !s.delivered->slower) continue;
    const Delivered& d = *s.delivered;
    const std::string figure = fmt::format("{:.2f}x [{:.2f}, {:.2f}]", d.ratio, d.ci_low, d.ci_high);
    if (s.chosen_config != base) {
      best.plan.notes.push_back(fmt::format("at {} the per-size choice delivered {} the defaults: falls back to the "
                                            "library's own choice there",
                                            format_bytes(s.bytes), figure));
      s.chosen_config = base;
      s.chosen_is_default = base == best.default_config;
      changed = true;
    } else if (!best.plan.job_is_default) {
      best.plan.notes.push_back(fmt::format("the job-wide part {} delivered {} the defaults at {}: falls back to the "
                                            "library defaults",
                                            best.plan.job.dump(), figure, format_bytes(s.bytes)));
      whole = true;
    }
  }
  if (whole) {
    best.plan.job = job_part(best.default_config, best.plan.scopes);
    best.plan.job_is_default = true;
    for (auto& s : best.sizes) {
      s.chosen_config = best.default_config;
      s.chosen_is_default = true;
    }
    changed = true;
  }
  if (changed) finish_ranges(best);
  return changed;
}

DeliveryArm defaults_arm(const BestTable& best) {
  return DeliveryArm{"defaults", pinned_env(best.study), job_part(best.default_config, best.plan.scopes)};
}

Expected<std::vector<std::map<uint64_t, Delivered>>> compare_arms(DeliverySession& session, const DeliveryArm& defaults,
                                                                  const std::vector<DeliveryArm>& arms,
                                                                  const std::vector<uint64_t>& sizes,
                                                                  const VerifyOptions& options) {
  // values[0]: the defaults; values[k + 1]: arms[k].
  std::vector<std::map<uint64_t, std::vector<double>>> values(arms.size() + 1);
  const int n = static_cast<int>(arms.size()) + 1;
  const int rounds = std::max(1, options.rounds);
  int done = 0;
  for (int r = 0; r < rounds && !cancel_requested(); ++r) {
    for (int k = 0; k < n && !cancel_requested(); ++k) {
      // Round r starts at arm r mod n: with one arm, defaults first in even rounds, the plan in odd.
      const int which = (r + k) % n;
      const DeliveryArm& arm = which == 0 ? defaults : arms[which - 1];
      auto m = session.measure(arm, sizes);
      if (!m) return runtime_error("{} arm of the delivered comparison: {}", arm.name, m.error().message);
      for (uint64_t b : sizes) {
        const auto it = m->find(b);
        values[which][b].push_back(it == m->end() ? std::nan("") : it->second);
      }
      if (options.progress) options.progress(++done, n * rounds);
    }
  }
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
  for (const auto& s : best.sizes) {
    if (s.delivered && s.delivered->slower) return false;
  }
  return true;
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
  DeliveryArm plan{"plan", pe.vars, best.plan.job};
  bool loads = best.plan.job != defaults.job;
  for (const auto& kv : pe.vars) {
    if (std::find(pinned.begin(), pinned.end(), kv) == pinned.end()) loads = true;
  }
  // The client first: a missing tool is worth knowing even when this plan needs no measurement.
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<DeliverySession> session, client->open(best.study));
  if (!loads) {
    best.delivery.why = "the plan is the library's defaults: a job loads nothing from it";
    return {};
  }
  ACCELTUNE_TRY(write_plan_files(best));
  std::vector<uint64_t> sizes;
  for (const auto& s : best.sizes) sizes.push_back(s.bytes);
  VerifyOptions o = options;
  o.rounds = std::max(2, options.rounds);
  ACCELTUNE_TRY_ASSIGN(auto measured, compare_arms(*session, defaults, {plan}, sizes, o));
  if (cancel_requested()) return runtime_error("cancelled by {} while verifying", signal_name(cancel_signal()));
  for (auto& s : best.sizes) {
    const auto it = measured[0].find(s.bytes);
    if (it != measured[0].end()) s.delivered = it->second;
  }
  const int rounds = o.rounds;
  best.delivery.state = "measured";
  best.delivery.client = client->description;
  best.delivery.rounds = rounds;
  best.delivery.at = utc_now_iso8601();
  best.delivery.fingerprint = options.fingerprint_id;
  return {};
}

Expected<DeliveredPlan> verify_and_fall_back(BestTable& best, const DeliverOptions& options) {
  DeliveredPlan out;
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<ResultStore> store, open_store("dir", best.dir));
  for (int pass = 0; pass < std::max(1, options.measurements); ++pass) {
    ACCELTUNE_TRY(verify_delivery(best, options.verify));
    ACCELTUNE_TRY(store->write_best(best.to_json()));
    ++out.measurements;
    if (options.on_measured) options.on_measured(best);
    if (best.delivery.state != "measured") {
      out.verdict = PlanVerdict::not_verified;
      out.why = best.delivery.why;
      return out;
    }
    if (delivery_pays(best)) {
      out.verdict = PlanVerdict::pays;
      return out;
    }
    out.verdict = PlanVerdict::no_longer_pays;
    if (!options.fall_back || !apply_delivered_fallback(best)) return out;
    ACCELTUNE_TRY(write_plan_files(best));
    ++out.fallbacks;
    out.verdict = PlanVerdict::fell_back_unmeasured;
    if (options.on_fallback) options.on_fallback(pass + 1 < options.measurements);
  }
  return out;
}

}  // namespace acceltune
