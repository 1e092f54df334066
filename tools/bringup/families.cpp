// Which families of paths this node can tune and how bring-up splits its time among them.
#include "tools/bringup/families.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/ranges.h>

#include "tuner/delivery.hpp"

namespace acceltune::bringup {
namespace {

// The first note of a probe section ("gpus: no CUDA GPU: ..."), without the section's name.
std::string probe_note(const Json& probe, const std::string& section) {
  if (!probe.contains("notes") || !probe["notes"].is_array()) return "";
  const std::string prefix = section + ": ";
  for (const auto& n : probe["notes"]) {
    if (n.is_string() && n.get<std::string>().rfind(prefix, 0) == 0) return n.get<std::string>().substr(prefix.size());
  }
  return "";
}

}  // namespace

NodeFacts node_facts(const Json& probe, bool may_try) {
  NodeFacts n;
  n.gpus = probe.contains("gpus") && probe["gpus"].is_array() ? static_cast<int>(probe["gpus"].size()) : 0;
  n.gpu_why = probe_note(probe, "gpus");
  n.rdma_devices = probe.contains("rdma") && probe["rdma"].is_array() ? static_cast<int>(probe["rdma"].size()) : 0;
  n.rdma_why = probe_note(probe, "rdma");
  const Json cpu = probe.value("cpu", Json::object());
  n.cores = std::max(1, cpu.value("usable_cores", cpu.value("logical_cores", 1)));
  for (const auto& [name, f] : families_in_order()) {
    if (f->observe && f->bringup) f->observe(n, may_try);
  }
  return n;
}

const std::vector<std::string>& family_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, f] : families_in_order()) {
      if (f->listed && f->bringup) out.push_back(name);
    }
    return out;
  }();
  return names;
}

Expected<std::vector<Family>> pick_families(const NodeFacts& node, const std::vector<std::string>& only,
                                            const std::vector<std::string>& skip) {
  const auto& names = family_names();
  auto named = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  for (const auto* list : {&only, &skip}) {
    for (const auto& f : *list) {
      const FamilyInfo* info = FamilyRegistry::instance().find(f);
      if (!info || !info->bringup) {
        return input_error("{} names an unknown family '{}' (known: {})", list == &only ? "--only" : "--skip", f,
                           fmt::format("{}", fmt::join(names, ", ")));
      }
    }
  }
  std::vector<Family> out;
  for (const auto& [name, info] : families_in_order()) {
    if (!info->bringup || (!info->listed && !named(only, name))) continue;
    FamilyRole role = info->bringup(node);
    Family f{name, role.what, std::move(role.studies), role.skipped};
    if (!f.skipped.empty()) {
      f.studies.clear();
    } else {
      if (!only.empty() && !named(only, f.name)) f.skipped = "not named by --only";
      if (named(skip, f.name)) f.skipped = "named by --skip";
      if (!f.skipped.empty()) f.studies.clear();
    }
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

// Why a family's result is not what a plain search should give a job here; empty when it is.
std::string not_loaded_by_a_job(const FamilyInfo& f, const FamilyRole& role) {
  if (!role.skipped.empty()) return role.skipped;
  if (role.studies.empty()) return "no study on this node";
  if (!f.advice.empty()) return "no library reads its params (a check: its best config is advice)";
  if (f.env_prefixes.empty()) return "no job reads its result through variables (it leaves as a reviewed script)";
  if (f.one_env_for_all_paths) {
    return "one environment governs all its paths, so one study's lines are held back (bring-up measures them "
           "together)";
  }
  const bool proven = std::any_of(f.kernels.begin(), f.kernels.end(),
                                  [](const std::string& k) { return DeliveryRegistry::instance().find(k) != nullptr; });
  if (!proven) return "no plain client proves its delivered gain";
  return "";
}

}  // namespace

DefaultSearch default_search(const NodeFacts& node) {
  std::vector<std::string> passed;
  std::optional<Study> first_running;
  std::string first_what = "the memory-path check";
  for (const auto& [name, info] : families_in_order()) {
    if (!info->bringup || !info->listed) continue;
    const FamilyRole role = info->bringup(node);
    if (!first_running && role.skipped.empty() && !role.studies.empty()) {
      first_running = role.studies.front();
      first_what = role.what;
    }
    const std::string why_not = not_loaded_by_a_job(*info, role);
    if (why_not.empty()) {
      const Study& s = role.studies.front();
      return {s, fmt::format("no --space given: searching {} ({}), the first space bring-up tunes here whose result a "
                             "job loads ({}* variables, its delivered gain measured through a plain client){}",
                             s.space, role.what, fmt::join(info->env_prefixes, "*, "),
                             passed.empty() ? "" : fmt::format("; passed over: {}", fmt::join(passed, "; ")))};
    }
    passed.push_back(fmt::format("{}: {}", name, why_not));
  }
  const Study fallback = first_running.value_or(Study{});  // none runs: no space, and search asks for one
  return {fallback, fmt::format("no --space given, and no family here has a result a job loads ({}): searching {} "
                                "({}), the first study bring-up runs here",
                                fmt::join(passed, "; "), fallback.space, first_what)};
}

std::vector<Study> studies_to_run(const std::vector<Family>& families) {
  std::vector<Study> out;
  for (const auto& f : families) out.insert(out.end(), f.studies.begin(), f.studies.end());
  return out;
}

double minimum_seconds(const std::vector<Study>& studies) {
  double s = 0;
  for (const auto& x : studies) s += x.minimum_seconds;
  return s;
}

double share_seconds(const std::vector<Study>& remaining, double left) {
  if (remaining.empty()) return 0;
  double total = 0;
  for (const auto& s : remaining) total += s.weight;
  const double share = total > 0 ? left * remaining.front().weight / total : left;
  return std::max(share, remaining.front().minimum_seconds);
}

}  // namespace acceltune::bringup
