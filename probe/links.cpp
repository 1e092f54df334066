// Link ceilings, efficiencies and verdicts (probe/links.hpp).
#include "probe/links.hpp"
#include "probe/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace acceltune {
namespace {
std::string gbps_text_impl(double gbps) {
  if (gbps >= 1000) return fmt::format("{:.2f} TB/s", gbps / 1000);
  if (gbps >= 100) return fmt::format("{:.0f} GB/s", gbps);
  if (gbps >= 10) return fmt::format("{:.1f} GB/s", gbps);
  return fmt::format("{:.2f} GB/s", gbps);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The rule answering for a link record's kind; nullptr for none.
const LinkRule* rule_of(const Json& link) {
  const std::string kind = json_str(field_of(link, "kind"));
  for (const auto& [name, rule] : LinkRuleRegistry::instance().entries()) {
    if (std::find(rule.kinds.begin(), rule.kinds.end(), kind) != rule.kinds.end()) return &rule;
  }
  return nullptr;
}

}  // namespace

std::string gbps_text(double gbps) { return gbps_text_impl(gbps); }

// A PCIe link's ceiling at its maximum, its state now, and the finding when it trained lower.
// `idle_lowers_gen`: GPUs lower the generation while idle, so a lower generation is a finding only
// under load (the width does not change with power state).
void pcie_ceiling(LinkCeiling& c, const Json& pcie, bool idle_lowers_gen) {
  const int64_t max_gen = json_int(field_of(pcie, "max_gen")), max_w = json_int(field_of(pcie, "max_width"));
  const int64_t cur_gen = json_int(field_of(pcie, "current_gen")), cur_w = json_int(field_of(pcie, "current_width"));
  const std::string source = json_str(field_of(pcie, "source"));
  if (max_gen <= 0 || max_w <= 0 || pcie_gbps(static_cast<int>(max_gen), static_cast<int>(max_w)) <= 0) {
    c.basis = "the probe read no PCIe generation and width for it";
    return;
  }
  c.gbps = pcie_gbps(static_cast<int>(max_gen), static_cast<int>(max_w));
  c.basis = fmt::format("PCIe gen {} x{} (maximum{}), after line encoding, per direction; a copy reaches about 80-90% "
                        "of it (packet headers)",
                        max_gen, max_w, source.empty() ? "" : ", from " + source);
  if (cur_gen <= 0 || cur_w <= 0) return;
  c.state = fmt::format("gen {} x{} ({}) of maximum gen {} x{}", cur_gen, cur_w,
                        gbps_text(pcie_gbps(static_cast<int>(cur_gen), static_cast<int>(cur_w))), max_gen, max_w);
  std::vector<std::string> low;
  if (cur_w < max_w) low.push_back(fmt::format("width x{} of x{}", cur_w, max_w));
  if (cur_gen < max_gen) {
    low.push_back(idle_lowers_gen
                      ? fmt::format("gen {} of gen {} when probed (a GPU lowers it while idle: confirm under load, "
                                    "nvidia-smi -q -d PCIE)",
                                    cur_gen, max_gen)
                      : fmt::format("gen {} of gen {}", cur_gen, max_gen));
  }
  if (!low.empty()) {
    std::string joined;
    for (const auto& l : low) joined += (joined.empty() ? "" : ", ") + l;
    c.finding = fmt::format("trained below its maximum: {} (reseat the card, check the slot's lanes and the BIOS "
                            "link settings)",
                            joined);
  }
}

std::string gpu_label(const Json& g) {
  return fmt::format("GPU {} ({})", json_int(field_of(g, "index"), 0), json_str(field_of(g, "name")).empty() ? "unnamed" : json_str(field_of(g, "name")));
}

std::string ceiling_id_of(const Json& probe, const Json& link) {
  const LinkRule* rule = rule_of(link);
  if (!rule) return "";
  return rule->id_of ? rule->id_of(probe, link) : rule->fixed_id;
}

double pcie_gbps(int gen, int width) {
  // GT/s per lane and the share of it that is data.
  struct Row {
    double gts, encoding;
  };
  static const Row rows[] = {{2.5, 8.0 / 10}, {5, 8.0 / 10}, {8, 128.0 / 130}, {16, 128.0 / 130},
                             {32, 128.0 / 130}, {64, 242.0 / 256}};
  if (gen < 1 || gen > 6 || width <= 0) return 0;
  return rows[gen - 1].gts * rows[gen - 1].encoding * width / 8;
}

std::optional<double> gpu_memory_spec_gbps(const std::string& name, double memory_gib) {
  // Vendor datasheets; the first pattern the lower-case name contains wins, so specific first.
  struct Row {
    const char* pattern;
    double gbps;
  };
  static const Row rows[] = {
      {"gb200", 8000}, {"b200", 8000}, {"b100", 8000}, {"h200", 4800}, {"h100 nvl", 3900}, {"h100 pcie", 2000},
      {"h100", 3350}, {"h800", 3350}, {"a100 80gb pcie", 1935}, {"a100-pcie-80gb", 1935}, {"a100-sxm4-80gb", 2039},
      {"a100", 1555}, {"a800", 2039}, {"a30", 933}, {"a40", 696}, {"a10g", 600}, {"a10", 600}, {"l40s", 864},
      {"l40", 864}, {"l4", 300}, {"v100s", 1134}, {"v100", 900}, {"t4", 320}, {"rtx 6000 ada", 960},
      {"rtx 4090", 1008}, {"rtx a6000", 768},
  };
  const std::string n = lower(name);
  if (n.find("gh200") != std::string::npos) return memory_gib > 110 ? 4900.0 : 4000.0;  // HBM3e 144 GB, HBM3 96 GB
  for (const auto& r : rows) {
    if (n.find(r.pattern) != std::string::npos) return r.gbps;
  }
  return std::nullopt;
}

double nvlink_gbps_per_link(const std::string& cc) {
  if (cc == "6.0") return 20;                     // P100, NVLink 1
  if (cc == "7.0") return 25;                     // V100, NVLink 2
  if (cc == "8.0") return 25;                     // A100, NVLink 3
  if (cc == "8.6") return 14.0625;                // A40 / RTX A6000 bridges, NVLink 3 at 4 lanes
  if (cc == "9.0") return 25;                     // H100, H200, GH200: NVLink 4
  if (cc.rfind("10.", 0) == 0) return 50;         // B200, GB200: NVLink 5
  return 0;
}

std::string verdict_of(double efficiency) {
  if (efficiency >= kVerdictGood) return "good";
  if (efficiency >= kVerdictCheck) return "check";
  return "investigate";
}

std::string verdict_thresholds_text() {
  return fmt::format("good >= {:.0f}%, check >= {:.0f}%, investigate below", kVerdictGood * 100, kVerdictCheck * 100);
}

std::vector<LinkCeiling> link_ceilings(const Json& probe) {
  std::vector<const LinkRule*> rules;
  for (const auto& [name, rule] : LinkRuleRegistry::instance().entries()) rules.push_back(&rule);
  std::stable_sort(rules.begin(), rules.end(), [](const LinkRule* a, const LinkRule* b) { return a->order < b->order; });
  std::vector<LinkCeiling> out;
  for (const LinkRule* r : rules) {
    if (!r->ceilings) continue;
    for (auto& c : r->ceilings(probe)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> link_suggestions(const Json& probe, const Json& link) {
  std::vector<std::string> out;
  const std::string kind = json_str(field_of(link, "kind"));
  const std::string id = ceiling_id_of(probe, link);
  for (const auto& c : link_ceilings(probe)) {
    if (c.id == id && !c.finding.empty()) out.push_back(c.label + ": " + c.finding);
  }
  // A GPU and the NIC on different NUMA nodes: data between them crosses the socket link.
  const LinkRule* rule = rule_of(link);
  if (rule && rule->device) {
    const auto [dev, record] = rule->device(probe, link);
    const int64_t node = record ? json_int(field_of(*record, "numa_node")) : -1;
    for (const auto& g : node >= 0 ? json_list(probe, "gpus") : Json::array()) {
      const int64_t gn = json_int(field_of(g, "numa_node"));
      if (gn >= 0 && gn != node) {
        out.push_back(fmt::format("{} is on NUMA node {} and {} on node {}: traffic between them crosses the socket "
                                  "link; pair each GPU with a NIC on its own node (NCCL_IB_HCA, UCX_NET_DEVICES) and "
                                  "bind its rank to that node's CPUs",
                                  gpu_label(g), gn, dev, node));
      }
    }
  }
  if (rule && rule->suggestions) {
    for (auto& s : rule->suggestions(probe, link)) out.push_back(std::move(s));
  }
  const std::string governor = json_str(field_of(field_of(probe, "cpu"), "governor"));
  if (!governor.empty() && governor != "performance") {
    out.push_back(fmt::format("the CPU frequency governor is '{}', not 'performance': cpupower frequency-set -g "
                              "performance (or the BIOS power profile)",
                              governor));
  }
  return out;
}

Efficiency efficiency_of(const Json& study, const BestTable& best) {
  return efficiency_of(field_of(study, "fingerprint"), field_of(study, "link"), best);
}

Efficiency efficiency_of(const Json& probe, const Json& link, const BestTable& best) {
  Efficiency e;
  std::optional<double> ceiling_low;
  e.link = link;
  if (!link.is_object() || json_str(field_of(link, "kind")).empty()) {
    e.why_none = "the study records no link (its kernel maps to no single link, or it predates link records)";
    return e;
  }
  e.link_id = ceiling_id_of(probe, link);
  const auto ceilings = link_ceilings(probe);
  const LinkCeiling* c = nullptr;
  for (const auto& x : ceilings) {
    if (x.id == e.link_id) c = &x;
  }
  const std::string kind = json_str(field_of(link, "kind"));
  const LinkRule* rule = rule_of(link);
  if (!c && rule && !rule->no_line_rate.empty()) {
    e.link_label = rule->no_line_rate;
    e.why_none = fmt::format("no ceiling: {} has no line rate", e.link_label);
  } else if (!c) {
    e.link_label = e.link_id;
    e.why_none = fmt::format("the study's probe lists no link '{}'", e.link_id);
  } else {
    e.link_label = c->label;
    e.ceiling_gbps = c->gbps;
    e.ceiling_basis = c->basis;
    ceiling_low = c->gbps_low;
    if (!c->gbps) e.why_none = c->basis;
  }
  // The measured best: the highest certified median over the sizes (the size where the link
  // saturates), else the search's recommendation, named as such.
  // Host memory: only sizes whose two buffers span at least the probe's reference buffer, so a
  // copy served from the caches is not judged against memory.
  uint64_t min_bytes = 0;
  if (kind == "host-memory") {
    min_bytes = static_cast<uint64_t>(json_int(field_of(field_of(probe, "memory_reference"), "buffer_bytes"), 0)) / 2;
  }
  for (const bool certified : {true, false}) {
    for (const auto& s : best.sizes) {
      if (s.bytes < min_bytes) continue;
      const bool has = certified ? s.certified && s.certified_rounds > 0 : s.best_trial.has_value();
      const double v = !has ? 0 : certified ? std::max(s.certified_value, s.certified_default_value) : s.best_value;
      if (v > 0 && (!e.measured_gbps || v > *e.measured_gbps)) {
        e.measured_gbps = v;
        e.bytes = s.bytes;
        e.measured_is = certified ? "certified" : "search, not certified";
      }
    }
    if (e.measured_gbps) break;
  }
  if (best.unit != "GB/s") {
    e.why_none = fmt::format("the objective is in {}, not a bandwidth: a link's ceiling does not apply", best.unit);
    return e;
  }
  if (!e.measured_gbps) {
    if (e.why_none.empty()) {
      e.why_none = min_bytes > 0 ? fmt::format("no size of at least {} measured ok (smaller copies run from the caches, "
                                               "and host memory's ceiling counts from half the probe's reference buffer)",
                                               format_bytes(min_bytes))
                                 : "nothing measured ok";
    }
    return e;
  }
  if (!e.ceiling_gbps) {
    // No ceiling, no verdict; what the probe finds about the link still holds.
    e.suggestions = link_suggestions(probe, link);
    return e;
  }
  e.efficiency = *e.measured_gbps / *e.ceiling_gbps;
  e.verdict = verdict_of(*e.efficiency);
  // A measured ceiling moves between runs: a verdict holds only where it is the same against the
  // ceiling's lower figure too.
  if (ceiling_low && *ceiling_low > 0 && *ceiling_low < *e.ceiling_gbps) {
    e.efficiency_high = *e.measured_gbps / *ceiling_low;
    if (verdict_of(*e.efficiency_high) != e.verdict) {
      e.verdict = "no verdict";
      e.note += fmt::format("the ceiling was measured between {} (the median of its repetitions) and {} (their best): "
                            "the efficiency lies between {:.0f}% and {:.0f}%, which spans two verdicts; ",
                            gbps_text(*ceiling_low), gbps_text(*e.ceiling_gbps), *e.efficiency * 100,
                            *e.efficiency_high * 100);
    }
  }
  // A copy whose two buffers fit the last-level cache may be served from it: no verdict on memory.
  const int64_t llc = json_int(field_of(field_of(probe, "memory_reference"), "llc_bytes"), 0);
  if (kind == "host-memory" && llc > 0 && 2 * e.bytes <= static_cast<uint64_t>(llc)) {
    e.verdict = "no verdict";
    e.note += fmt::format("at {} the two buffers ({}) fit this machine's {} last-level cache: the figure may come "
                          "from the cache rather than memory; ",
                          format_bytes(e.bytes), format_bytes(2 * e.bytes), format_bytes(static_cast<uint64_t>(llc)));
  }
  if (*e.efficiency > 1.0) {
    e.note += kind == "host-memory"
                 ? "above the reference: the probe's copy is itself a measurement (noisy on a shared machine), and a "
                   "copy tuned for this size can beat it"
                 : "above the ceiling: check the figure's convention (a collective's busbw, a copy counting bytes once)";
  }
  if (e.note.size() >= 2 && e.note.compare(e.note.size() - 2, 2, "; ") == 0) e.note.resize(e.note.size() - 2);
  if (e.verdict != "good") e.suggestions = link_suggestions(probe, link);
  return e;
}

Json LinkCeiling::to_json() const {
  return Json{{"id", id}, {"kind", kind}, {"label", label}, {"gbps", gbps ? Json(*gbps) : Json(nullptr)},
              {"basis", basis}, {"state", state}, {"finding", finding}};
}

std::string Efficiency::short_text() const {
  if (!efficiency) return "none: " + why_none;
  if (efficiency_high && verdict == "no verdict") {
    return fmt::format("{:.0f}-{:.0f}% no verdict ({} of {}, {})", *efficiency * 100, *efficiency_high * 100,
                       gbps_text(*measured_gbps), gbps_text(*ceiling_gbps), link_label);
  }
  return fmt::format("{:.0f}% {} ({} of {}, {})", *efficiency * 100, verdict, gbps_text(*measured_gbps),
                     gbps_text(*ceiling_gbps), link_label);
}

Json Efficiency::to_json() const {
  Json j = Json::object();
  j["link"] = link;
  j["link_id"] = link_id;
  j["link_label"] = link_label;
  j["measured_gbps"] = measured_gbps ? Json(*measured_gbps) : Json(nullptr);
  j["bytes"] = bytes;
  j["measured_is"] = measured_is;
  j["ceiling_gbps"] = ceiling_gbps ? Json(*ceiling_gbps) : Json(nullptr);
  j["ceiling_basis"] = ceiling_basis;
  j["efficiency"] = efficiency ? Json(*efficiency) : Json(nullptr);
  j["efficiency_high"] = efficiency_high ? Json(*efficiency_high) : Json(nullptr);
  j["verdict"] = verdict;
  j["thresholds"] = verdict_thresholds_text();
  j["why_none"] = why_none;
  j["suggestions"] = suggestions;
  j["note"] = note;
  return j;
}

std::string Efficiency::line() const {
  const std::string where = link_label.empty() ? "link" : "link " + link_label;
  if (!efficiency) return fmt::format("{}: no efficiency: {}", where, why_none);
  // Against a measured ceiling the efficiency is a range: its best repetition to its median.
  const std::string range = efficiency_high ? fmt::format(" to {:.0f}%", *efficiency_high * 100) : "";
  return fmt::format("{}: {} {} at {} of {} = {:.0f}%{}, {} ({})", where, gbps_text(*measured_gbps), measured_is,
                     format_bytes(bytes), gbps_text(*ceiling_gbps), *efficiency * 100, range, verdict,
                     verdict_thresholds_text());
}

}  // namespace acceltune
