// mpich-json: MPICH's collective selection file, read at MPI_Init from
// MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE. It is a decision tree of nested objects whose keys
// are conditions ("collective=allreduce", "comm_type=intra", "comm_size<=N", "avg_msg_size<=N",
// "total_msg_size<=N", "...=any" as the last branch) and whose leaves are
// {"algorithm=MPIR_<Coll>_intra_<name>": {}}. The collective and its algorithm come from the
// space's MPIR_CVAR_<COLL>_INTRA_ALGORITHM params (MPICH's names are the rows' of
// tuner/collectives.hpp); the message ranges are the best-per-size table's. MPICH measures
// allreduce and bcast by the per-rank buffer (avg_msg_size) and the gathering and scattering
// collectives by the total (total_msg_size), as acceltune's sizes do.
#include <cctype>
#include <map>

#include "tuner/best.hpp"
#include "tuner/collectives.hpp"

namespace acceltune {
namespace {

// The collectives a selection file chooses for: the rows with an MPICH algorithm variable.
std::vector<const CollectiveRow*> selectable_collectives() {
  std::vector<const CollectiveRow*> out;
  for (const auto& row : collective_rows()) {
    if (!row.mpich_cvar.empty()) out.push_back(&row);
  }
  return out;
}

std::string algorithm_variable(const CollectiveRow& c) {
  return fmt::format("MPIR_CVAR_{}_INTRA_ALGORITHM", c.mpich_cvar);
}

Expected<std::string> emit_mpich_json(const BestTable& best) {
  const CollectiveRow* coll = nullptr;
  std::string param;
  for (const auto& [p, var] : best.env) {
    for (const CollectiveRow* c : selectable_collectives()) {
      if (var == algorithm_variable(*c)) {
        if (coll) {
          return input_error("space {}: params '{}' and '{}' both choose an MPICH algorithm; a selection file is "
                             "exported for one collective per study",
                             best.space, param, p);
        }
        coll = c;
        param = p;
      }
    }
  }
  if (!coll) {
    return input_error("space {}: no param sets MPIR_CVAR_<COLLECTIVE>_INTRA_ALGORITHM, so there is nothing for an "
                       "MPICH selection file; export it as env or json",
                       best.space);
  }
  if (best.trials_ok == 0 || best.ranges.empty()) {
    return runtime_error("space {}: no trial measured ok, so there is no rule to export", best.space);
  }
  Json branches = Json::object();
  std::vector<std::string> order;
  for (size_t i = 0; i < best.ranges.size(); ++i) {
    const SizeRange& r = best.ranges[i];
    std::string alg;
    if (r.config.contains(param)) alg = r.config[param].is_string() ? r.config[param].get<std::string>() : r.config[param].dump();
    if (alg.empty() || alg == "auto") {
      return input_error("space {}: sizes {}..{} keep MPICH's automatic choice, which a selection file cannot name; "
                         "export env, or search explicit algorithms only",
                         best.space, r.min_bytes, r.max_bytes == UINT64_MAX ? std::string("max") : std::to_string(r.max_bytes));
    }
    for (char& ch : alg) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string key = i + 1 == best.ranges.size() || r.max_bytes == UINT64_MAX
                                ? fmt::format("{}=any", coll->mpich_size_key)
                                : fmt::format("{}<={}", coll->mpich_size_key, r.max_bytes);
    branches[key] = Json{{fmt::format("algorithm=MPIR_{}_intra_{}", coll->mpich_function, alg), Json::object()}};
    order.push_back(key);
  }
  // Branches are tried in file order and the "any" branch must come last; nlohmann's object
  // sorts keys, so the tree is written by hand.
  std::string inner;
  for (size_t i = 0; i < order.size(); ++i) {
    inner += fmt::format("        {}: {}{}\n", Json(order[i]).dump(), branches[order[i]].dump(),
                         i + 1 < order.size() ? "," : "");
  }
  return fmt::format("{{\n  {}: {{\n    \"comm_type=intra\": {{\n      \"comm_size=any\": {{\n{}      }}\n    }}\n  }}\n}}\n",
                     Json(fmt::format("collective={}", coll->mpi_name)).dump(), inner);
}

// MPICH's algorithm of a collective, per message size range.
std::optional<Scope> mpich_json_carries(const ParamRef& p) {
  for (const CollectiveRow* c : selectable_collectives()) {
    if (p.env == algorithm_variable(*c)) return Scope::per_size;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> mpich_json_switch(const std::string& path) {
  return {{"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", path}};
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "mpich-json",
                   (EmitterInfo{"MPICH collective selection JSON (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)",
                                emit_mpich_json, mpich_json_carries, "mpich-selection.json", mpich_json_switch}))

}  // namespace acceltune
