// Export format nccl-tuner: the table NCCL's example tuner plugin reads, which the acceltune
// tuner plugin (libnccl-tuner-acceltune.so) reads too:
//   collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff[,chunkSize]
// one row per best-per-size range, -1 where a column is not tuned; the eleventh column only on a
// row whose chunk size was tuned. The written table passes the same checks the plugin applies
// when it reads one (results/nccl_tuner_table.hpp), or nothing is written.
#include <cstdint>
#include <optional>
#include <string>

#include "tuner/family.hpp"
#include "results/nccl_tuner_table.hpp"
#include "tuner/best.hpp"
#include "tuner/collectives.hpp"

namespace acceltune {
namespace {

// A value that leaves the choice to NCCL rather than naming one.
bool leaves_choice(const Json& v) {
  if (v.is_null()) return true;
  // -1 is the table's wildcard; 0 channels is NCCL's own "not set".
  if (v.is_number_integer()) return v.get<int64_t>() == -1 || v.get<int64_t>() == 0;
  if (!v.is_string()) return false;
  const std::string f = nccl_table::folded(v.get<std::string>());
  return f.empty() || f == "auto" || f == "default";
}

std::string count_column(const Json& space, const char* field) {
  if (space.contains(field) && space[field].is_number_integer() && space[field].get<int64_t>() > 0) {
    return std::to_string(space[field].get<int64_t>());
  }
  return "-1";
}

struct Columns {
  std::string algorithm, protocol, channels, chunk;  // param names; empty when not tuned
};

// The collective NCCL names the study's operation by, or why the study has none.
Expected<std::string> study_collective(const BestTable& best) {
  const Json& study = best.study;
  std::string op = study.contains("workload") ? study["workload"].value("operation", "") : "";
  if (op.empty()) op = study.value("space", Json::object()).value("operation", "");
  if (op.empty()) {
    return input_error(
        "space {}: the nccl-tuner export needs the study's collective (study.json workload "
        "'operation'); export from the study directory",
        best.space);
  }
  const int collective_no = nccl_table::collective_of(op);
  if (collective_no < 0) {
    std::string names;
    for (const auto& row : collective_rows()) {
      if (row.nccl_tuner_id >= 0) names += (names.empty() ? "" : ", ") + std::string(row.nccl_tuner_name);
    }
    return input_error("space {}: operation '{}' is not a collective that NCCL asks a tuner about ({})", best.space,
                       op, names);
  }
  return std::string(nccl_table::collective_name(collective_no));
}

// Which params fill the table's tuned columns; refused when none does.
Expected<Columns> tuned_columns(const BestTable& best) {
  Columns col;
  for (const auto& [param, var] : best.env) {
    if (var == "NCCL_ALGO") col.algorithm = param;
    if (var == "NCCL_PROTO") col.protocol = param;
    if (var == "NCCL_MIN_NCHANNELS" || var == "NCCL_MAX_NCHANNELS") col.channels = param;
  }
  if (best.default_config.contains("channels")) col.channels = "channels";
  if (best.default_config.contains("chunk_size")) col.chunk = "chunk_size";
  if (col.algorithm.empty() && col.protocol.empty() && col.channels.empty() && col.chunk.empty()) {
    return input_error(
        "space {}: no param is bound to NCCL_ALGO, NCCL_PROTO or NCCL_MIN/MAX_NCHANNELS, and none is "
        "named channels or chunk_size: there is nothing for an NCCL tuner table",
        best.space);
  }
  return col;
}

// One tuned column of a range's row: NCCL's name for an algorithm or protocol, a positive count,
// or -1 where the config leaves the choice to NCCL (`any` is set otherwise).
Expected<std::string> cell_text(const BestTable& best, const Columns& col, const Json& config,
                                const std::string& param, bool* any) {
  if (param.empty() || !config.contains(param) || leaves_choice(config[param])) return std::string("-1");
  const Json& v = config[param];
  *any = true;
  if (param == col.algorithm || param == col.protocol) {
    const bool algorithm = param == col.algorithm;
    const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    const int n = algorithm ? nccl_table::algorithm_of(s) : nccl_table::protocol_of(s);
    if (n < 0) {
      return input_error(
          "space {}: param '{}' holds {} '{}', which NCCL does not name (NCCL_{} takes {}); a tuner "
          "table needs one {} per config",
          best.space, param, algorithm ? "algorithm" : "protocol", s, algorithm ? "ALGO" : "PROTO",
          algorithm ? "Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT" : "LL, LL128, Simple",
          algorithm ? "algorithm" : "protocol");
    }
    return std::string(algorithm ? nccl_table::algorithm_name(n) : nccl_table::protocol_name(n));
  }
  if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
    return input_error("space {}: param '{}' holds {}, not a positive count", best.space, param, v.dump());
  }
  return std::to_string(v.get<int64_t>());
}

// The nRanks column. A space may name its rank count symbolically ("ranks": "gpus"); the workload
// holds the count it resolved to. One rank is no collective NCCL tunes, so that stays a wildcard.
std::string ranks_column(const Json& study, const Json& space) {
  std::string ranks = count_column(space, "ranks");
  if (ranks == "-1" && space.contains("ranks") && study.contains("workload") &&
      study["workload"].value("ranks", int64_t{1}) > 1) {
    ranks = std::to_string(study["workload"]["ranks"].get<int64_t>());
  }
  return ranks;
}

std::string table_header(const BestTable& best, const Columns& col) {
  std::string out =
      fmt::format("# acceltune nccl-tuner table: space {}, kernel {}, {} trials{}\n", best.space, best.kernel,
                  best.trials, best.certified ? ", gains certified against the default" : "");
  out += fingerprint_header(best.study);
  out += "# NCCL_TUNER_PLUGIN=acceltune ACCELTUNE_NCCL_TUNER_TABLE=<this file> (or NCCL_TUNER_CONFIG_FILE)\n";
  out += "# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n";
  if (!col.chunk.empty()) {
    out +=
        "# a row with an 11th column, chunkSize, sets the chunk size through the acceltune plugin; NCCL's example\n"
        "# tuner reads the first ten columns of such a row and leaves the chunk size to NCCL\n";
  }
  return out;
}

Expected<std::string> emit_nccl_tuner(const BestTable& best) {
  if (best.trials_ok == 0) {
    return runtime_error("space {}: no trial measured ok, so there is no config to export", best.space);
  }
  ACCELTUNE_TRY_ASSIGN(const std::string collective, study_collective(best));
  ACCELTUNE_TRY_ASSIGN(const Columns col, tuned_columns(best));
  const Json space = best.study.value("space", Json::object());
  const std::string nodes = count_column(space, "nodes");
  const std::string ranks = ranks_column(best.study, space);
  std::string out = table_header(best, col);
  int rows = 0;
  for (const auto& r : best.ranges) {
    bool any = false;
    std::string cells[4];
    const std::string* params[4] = {&col.algorithm, &col.protocol, &col.channels, &col.chunk};
    for (int k = 0; k < 4; ++k) {
      ACCELTUNE_TRY_ASSIGN(cells[k], cell_text(best, col, r.config, *params[k], &any));
    }
    // NCCL's own choice stands where the default won (or the gain was not significant).
    if (r.is_default || !any) {
      out += fmt::format("# bytes {}..{}: the library default, NCCL chooses\n", r.min_bytes, r.max_bytes);
      continue;
    }
    out += fmt::format("{},{},{},{},{},{},{},{},-1,-1{}\n", collective, r.min_bytes, r.max_bytes, cells[0], cells[1],
                       cells[2], nodes, ranks, cells[3] == "-1" ? "" : "," + cells[3]);
    ++rows;
  }
  if (rows == 0) out += "# no range gains over the library default; the table leaves every choice to NCCL\n";
  const nccl_table::ParseResult check = nccl_table::parse_table(out);
  if (!check.error.empty()) {
    return input_error(
        "space {}: the tuner plugin would refuse this nccl-tuner table ({} of the export); a chosen config holds a "
        "value NCCL cannot take: give the space's params values NCCL can",
        best.space, check.error);
  }
  return out;
}

// What NCCL asks a tuner per collective call: algorithm, protocol, channels (and our chunk size).
std::optional<Scope> nccl_tuner_carries(const ParamRef& p) {
  if (!format_applies("nccl-tuner", p.kernel)) return std::nullopt;
  if (p.env == "NCCL_ALGO" || p.env == "NCCL_PROTO" || p.env == "NCCL_MIN_NCHANNELS" || p.env == "NCCL_MAX_NCHANNELS" ||
      p.name == "channels" || p.name == "chunk_size") {
    return Scope::per_size;
  }
  return std::nullopt;
}

// NCCL reads both from the environment or from NCCL_CONF_FILE; the plugin finds the table there.
std::vector<std::pair<std::string, std::string>> nccl_tuner_switch(const std::string& path) {
  return {{"NCCL_TUNER_PLUGIN", "acceltune"}, {"NCCL_TUNER_CONFIG_FILE", path}};
}

}  // namespace

ACCELTUNE_REGISTER(EmitterInfo, "nccl-tuner",
                   (EmitterInfo{"the NCCL tuner-plugin CSV (libnccl-tuner-acceltune.so, NCCL's example tuner)",
                                emit_nccl_tuner, nccl_tuner_carries, "nccl-tuner.csv", nccl_tuner_switch}))

}  // namespace acceltune
