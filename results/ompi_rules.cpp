// ompi-rules: Open MPI's coll/tuned dynamic rules file (the classic text format that Open MPI
// 4.1 and later read), loaded with
//   mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE
// Per collective, per communicator size, per message size range: algorithm, fan-in/out and
// segment size. The collective and its fields come from the env-bound params of the space
// (OMPI_MCA_coll_tuned_<collective>_algorithm, ..._segmentsize, ..._tree_fanout/_chain_fanout);
// the ranges are the best-per-size table's; collective ids and algorithm names are the rows' of
// tuner/collectives.hpp.
#include <map>
#include <optional>

#include "tuner/best.hpp"
#include "tuner/collectives.hpp"
#include "tuner/plan.hpp"

namespace acceltune {
namespace {

// The collectives coll/tuned takes rules for: the rows with an Open MPI collective id.
std::vector<const CollectiveRow*> tuned_collectives() {
  std::vector<const CollectiveRow*> out;
  for (const auto& row : collective_rows()) {
    if (row.ompi_coll_id >= 0) out.push_back(&row);
  }
  return out;
}

constexpr const char* kPrefix = "OMPI_MCA_coll_tuned_";

struct Fields {
  const CollectiveRow* coll = nullptr;
  std::string algorithm, segsize, fanout;  // param names
};

Expected<int64_t> number_of(const Json& v, const CollectiveRow& c, const std::string& param) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    for (size_t i = 0; i < c.ompi_algorithms.size(); ++i) {
      if (s == c.ompi_algorithms[i]) return static_cast<int64_t>(i);
    }
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0') return n;
  }
  return input_error("param '{}' value {} is not a coll/tuned {} algorithm of Open MPI 4.1", param, v.dump(),
                     c.mpi_name);
}

int64_t integer_or_zero(const Json& config, const std::string& param) {
  if (param.empty() || !config.contains(param)) return 0;
  const Json& v = config[param];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) return std::strtoll(v.get<std::string>().c_str(), nullptr, 10);
  return 0;
}

std::string size_text(uint64_t b) {
  if (b == UINT64_MAX) return "max";
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

Expected<std::string> emit_ompi_rules(const BestTable& best) {
  std::map<std::string, Fields> by_coll;
  for (const auto& [param, var] : best.env) {
    if (var.rfind(kPrefix, 0) != 0) continue;
    const std::string rest = var.substr(std::string(kPrefix).size());
    for (const CollectiveRow* c : tuned_collectives()) {
      const std::string name(c->mpi_name);
      const std::string base = name + "_algorithm";
      if (rest.rfind(base, 0) != 0) continue;
      const std::string tail = rest.substr(base.size());
      // reduce_scatter_block shares the prefix of reduce_scatter; only exact fields count.
      if (tail.empty()) by_coll[name].algorithm = param;
      else if (tail == "_segmentsize") by_coll[name].segsize = param;
      else if (tail == "_tree_fanout" || tail == "_chain_fanout") by_coll[name].fanout = param;
      else continue;
      by_coll[name].coll = c;
    }
  }
  for (auto it = by_coll.begin(); it != by_coll.end();) {
    it = it->second.algorithm.empty() ? by_coll.erase(it) : std::next(it);
  }
  if (by_coll.empty()) {
    return input_error("space {}: no param sets OMPI_MCA_coll_tuned_<collective>_algorithm, so there is nothing for an "
                       "Open MPI rules file; export it as env or json",
                       best.space);
  }
  if (best.trials_ok == 0 || best.ranges.empty()) {
    return runtime_error("space {}: no trial measured ok, so there is no rule to export", best.space);
  }
  int64_t ranks = 0;
  if (best.study.contains("workload") && best.study["workload"].is_object()) {
    ranks = best.study["workload"].value("ranks", int64_t{0});
  }
  std::string out = fmt::format(
      "# acceltune: Open MPI coll/tuned dynamic rules from space {}, {} trials{}\n"
      "# load with: mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE\n"
      "# algorithm 0 falls back to Open MPI's own choice for that range\n",
      best.space, best.trials, best.certified ? ", gains certified against the default" : "");
  // A rules file holds only coll/tuned choices; the job-wide ones stay environment variables.
  if (auto pe = plan_env(best)) {
    for (const auto& [var, value] : pe->vars) {
      if (var.rfind("OMPI_MCA_coll_tuned_", 0) == 0) continue;  // the switch that names this file
      out += fmt::format("# with the job's environment: {}={} (acceltune export --format env)\n", var, value);
    }
  }
  out += fmt::format("{}  # collectives\n", by_coll.size());
  for (const auto& [name, f] : by_coll) {
    out += fmt::format("{}  # collective id: {}\n", f.coll->ompi_coll_id, name);
    out += "1  # communicator sizes\n";
    out += fmt::format("{}  # communicator size{}\n", ranks > 0 ? ranks : 1,
                       ranks > 0 ? " measured (the rule also covers the other sizes)" : " (any)");
    out += fmt::format("{}  # message size rules: min bytes, algorithm, fan in/out, segment bytes\n", best.ranges.size());
    for (const auto& r : best.ranges) {
      const Json& cfg = r.config;
      int64_t alg = 0;
      if (cfg.contains(f.algorithm)) {
        ACCELTUNE_TRY_ASSIGN(alg, number_of(cfg[f.algorithm], *f.coll, f.algorithm));
      }
      const int64_t seg = integer_or_zero(cfg, f.segsize);
      const int64_t fan = integer_or_zero(cfg, f.fanout);
      const std::string alg_name = alg >= 0 && static_cast<size_t>(alg) < f.coll->ompi_algorithms.size()
                                       ? std::string(f.coll->ompi_algorithms[static_cast<size_t>(alg)])
                                       : std::to_string(alg);
      // Choices outside coll/tuned that this range made differently: the file cannot carry them.
      std::string also;
      for (const auto& [p, var] : best.env) {
        if (var.rfind(kPrefix, 0) == 0 || !cfg.contains(p)) continue;
        if (best.export_config.contains(p) && best.export_config[p] == cfg[p]) continue;
        also += fmt::format(" {}={}", var, cfg[p].is_string() ? cfg[p].get<std::string>() : cfg[p].dump());
      }
      out += fmt::format("{} {} {} {}  # [{}, {}] {}{}{}\n", r.min_bytes, alg, fan, seg, size_text(r.min_bytes),
                         size_text(r.max_bytes), alg_name, r.is_default ? " (the default)" : "",
                         also.empty() ? "" : ", measured with" + also);
    }
  }
  return out;
}

// coll/tuned's algorithm, segment size and fan-out of a collective, per message size range.
std::optional<Scope> ompi_rules_carries(const ParamRef& p) {
  if (p.env.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::string rest = p.env.substr(std::string(kPrefix).size());
  for (const CollectiveRow* c : tuned_collectives()) {
    const std::string base = std::string(c->mpi_name) + "_algorithm";
    if (rest.rfind(base, 0) != 0) continue;
    const std::string tail = rest.substr(base.size());
    if (tail.empty() || tail == "_segmentsize" || tail == "_tree_fanout" || tail == "_chain_fanout") return Scope::per_size;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> ompi_rules_switch(const std::string& path) {
  return {{"OMPI_MCA_coll_tuned_use_dynamic_rules", "1"}, {"OMPI_MCA_coll_tuned_dynamic_rules_filename", path}};
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "ompi-rules",
                   (EmitterInfo{"Open MPI coll/tuned dynamic rules file (coll_tuned_dynamic_rules_filename)",
                                emit_ompi_rules, ompi_rules_carries, "ompi-rules.conf", ompi_rules_switch}))

}  // namespace acceltune
