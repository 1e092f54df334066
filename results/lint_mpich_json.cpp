// lint's MPICH selection JSON checks: the decision tree MPICH 4 reads from
// MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE (src/mpi/coll/src/csel.c), as results/mpich_json.cpp
// writes it. Top-level keys "collective=NAME"; inner keys conditions ("comm_type=intra",
// "comm_size<=N", "avg_msg_size<=N", "total_msg_size<=N", "...=any"), tried in file order, so the
// bounds of one condition ascend and "=any" comes last; leaves {"algorithm=MPIR_<Coll>_intra_<name>":
// {}} or {"composition=MPIDI_<Coll>_intra_composition_<greek>": {}} with names MPICH has. JSON that
// does not parse is a finding at its line.
#include <regex>

#include "results/lint.hpp"

namespace acceltune {
namespace {

// MPICH 4's intra-communicator algorithms of the collectives acceltune tunes (coll_algorithms.txt).
const std::map<std::string, std::set<std::string>>& known_algorithms() {
  static const std::map<std::string, std::set<std::string>> a = {
      {"allreduce",
       {"recursive_doubling", "reduce_scatter_allgather", "smp", "tree", "recexch", "ring", "k_reduce_scatter_allgather",
        "ccl"}},
      {"bcast",
       {"binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather", "smp", "tree", "pipelined_tree"}},
      {"allgather", {"brucks", "k_brucks", "recursive_doubling", "ring", "recexch_doubling", "recexch_halving"}},
      {"alltoall", {"brucks", "k_brucks", "pairwise", "pairwise_sendrecv_replace", "scattered"}},
      {"reduce_scatter", {"noncommutative", "pairwise", "recursive_doubling", "recursive_halving", "recexch"}},
  };
  return a;
}

const std::set<std::string>& collectives() {
  static const std::set<std::string> c = [] {
    const char* base[] = {"allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw", "barrier",
                          "bcast", "exscan", "gather", "gatherv", "reduce", "reduce_scatter", "reduce_scatter_block",
                          "scan", "scatter", "scatterv", "neighbor_allgather", "neighbor_allgatherv",
                          "neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw"};
    std::set<std::string> s;
    for (const char* b : base) {
      s.insert(b);
      s.insert(std::string("i") + b);
    }
    return s;
  }();
  return c;
}

const std::set<std::string>& condition_names() {
  static const std::set<std::string> n = {"comm_type",        "comm_size",         "avg_msg_size",     "total_msg_size",
                                          "count",            "is_commutative",    "is_sbuf_inplace",  "is_op_built_in",
                                          "is_block_regular", "is_node_consecutive", "is_node_canonical", "comm_avg_ppn",
                                          "comm_hierarchy"};
  return n;
}

class SelectionWalker {
 public:
  SelectionWalker(const std::string& path, const std::string& text, LintReport& r) : path_(path), text_(text), r_(r) {}

  // The line of `key`'s next occurrence: the tree is walked in file order, so searching on from
  // the last key found finds this one.
  int line_of(const std::string& key) {
    const std::string quoted = Json(key).dump();
    const size_t at = text_.find(quoted, cursor_);
    if (at == std::string::npos) return 0;
    cursor_ = at + quoted.size();
    return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  }
  void add(int line, std::string problem, std::string fix) { r_.findings.push_back({path_, line, std::move(problem), std::move(fix)}); }

  void leaf(const std::string& coll, const std::string& key, int line) {
    static const std::regex alg(R"(algorithm=MPIR_([A-Za-z_]+?)_(intra|inter|allcomm)_([a-z0-9_]+))");
    static const std::regex comp(R"(composition=MPIDI_([A-Za-z_]+?)_intra_composition_(alpha|beta|gamma|delta))");
    std::smatch m;
    if (std::regex_match(key, m, comp)) {
      if (lint_lower(m[1].str()) != coll) add(line, key + " is a composition of another collective than " + coll, "MPIDI_<" + coll + ">_intra_composition_alpha (beta, gamma)");
      return;
    }
    if (!std::regex_match(key, m, alg)) {
      add(line, "'" + key + "' is no algorithm MPICH names", "algorithm=MPIR_<Coll>_intra_<name> (MPIR_Allreduce_intra_ring)");
      return;
    }
    if (lint_lower(m[1].str()) != coll) {
      add(line, key + " is an algorithm of " + lint_lower(m[1].str()) + ", under collective=" + coll,
          "an algorithm of " + coll);
      return;
    }
    const auto k = known_algorithms().find(coll);
    if (m[2].str() != "intra" || k == known_algorithms().end() || k->second.count(m[3].str())) return;
    const std::string near = closest_name(m[3].str(), k->second);
    add(line, "MPICH 4 has no " + coll + " algorithm '" + m[3].str() + "'",
        near.empty() ? fmt::format("one of {}", fmt::join(k->second, ", "))
                     : "algorithm=MPIR_" + m[1].str() + "_intra_" + near);
  }

  void node(const std::string& coll, const Json& j, int line) {
    if (!j.is_object()) {
      add(line, "a decision is " + std::string(j.type_name()) + ", not an object", "{\"condition\": {...}} or {\"algorithm=...\": {}}");
      return;
    }
    if (j.empty()) {
      add(line, "an empty decision: no algorithm below this condition", "{\"algorithm=MPIR_<Coll>_intra_<name>\": {}}");
      return;
    }
    static const std::regex cond(R"(([a-z_]+)(<=|<|=)(.+))");
    std::map<std::string, std::pair<uint64_t, int>> last_bound;  // condition: bound, line
    std::set<std::string> after_any;
    bool leaves = false, conditions = false;
    for (const auto& [key, value] : j.items()) {
      const int l = line_of(key);
      if (key.rfind("algorithm=", 0) == 0 || key.rfind("composition=", 0) == 0) {
        leaves = true;
        leaf(coll, key, l);
        continue;
      }
      conditions = true;
      std::smatch m;
      if (!std::regex_match(key, m, cond) || !condition_names().count(m[1].str())) {
        add(l, "'" + key + "' is no condition MPICH reads", "comm_type=intra, comm_size<=N, avg_msg_size<=N, total_msg_size<=N or NAME=any");
      } else if (after_any.count(m[1].str())) {
        add(l, "'" + key + "' follows " + m[1].str() + "=any, which matches first: it is never reached", "the =any branch last");
      } else if (m[3].str() == "any") {
        after_any.insert(m[1].str());
      } else if (m[2].str() != "=") {
        char* end = nullptr;
        const uint64_t bound = std::strtoull(m[3].str().c_str(), &end, 10);
        if (*end != '\0') {
          add(l, "'" + m[3].str() + "' is not a number in " + key, m[1].str() + "<=N with N in bytes or ranks");
        } else if (const auto it = last_bound.find(m[1].str()); it != last_bound.end() && bound <= it->second.first) {
          add(l, fmt::format("{} is not above line {}'s bound {}: MPICH tries branches in file order, so this one is "
                             "never reached",
                             key, it->second.second, it->second.first),
              "the " + m[1].str() + " branches in ascending order");
        }
        last_bound[m[1].str()] = {bound, l};
      }
      node(coll, value, l);
    }
    if (leaves && conditions) add(line, "an object mixes conditions and algorithms", "the algorithm in its own branch");
  }

  void root(const Json& j) {
    if (!j.is_object() || j.empty()) {
      add(1, "the file is not an object of \"collective=NAME\" keys", "{\"collective=allreduce\": {...}}");
      return;
    }
    for (const auto& [key, value] : j.items()) {
      const int l = line_of(key);
      if (key.rfind("collective=", 0) != 0) {
        add(l, "'" + key + "' at the top: MPICH expects collective=NAME keys there", "\"collective=allreduce\" (or another collective)");
        continue;
      }
      const std::string coll = key.substr(11);
      if (!collectives().count(coll)) {
        const std::string near = closest_name(coll, collectives());
        add(l, "MPICH has no collective '" + coll + "'", near.empty() ? "collective=allreduce (or another MPI collective)" : "collective=" + near);
        continue;
      }
      node(coll, value, l);
    }
  }

 private:
  std::string path_;
  const std::string& text_;
  LintReport& r_;
  size_t cursor_ = 0;
};

}  // namespace

void lint_mpich_json_text(const std::string& path, const std::string& text, LintReport& r) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    const size_t at = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    std::string what = e.what();
    if (const size_t c = what.find("syntax error"); c != std::string::npos) what = what.substr(c);
    r.findings.push_back({path, line, "not JSON: " + what, "valid JSON (a missing comma, quote or brace here)"});
    return;
  }
  SelectionWalker(path, text, r).root(j);
}

}  // namespace acceltune
