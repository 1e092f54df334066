// lint's Open MPI rules checks: the coll/tuned dynamic rules file as results/ompi_rules.cpp writes
// it and Open MPI 4.1's coll_tuned_dynamic_file.c reads it (whitespace-separated integers, '#' to
// the end of a line a comment):
//   N collectives; per collective: its id (coll_base_functions.h's COLLTYPE), M communicator
//   sizes; per size: the size, K message rules; per rule: min bytes, algorithm, fan-in/out, segment.
// Checks: the structure and every count against the entries that follow, known collective ids,
// communicator and message sizes ascending (Open MPI takes the last rule at or below a size, so a
// rule out of order is never used), and each algorithm id against the installed Open MPI's
// enumerators (`ompi_info --param coll tuned --level 9 --parsable`).
#include <regex>
#include <sstream>

#include "results/lint.hpp"

namespace acceltune {
namespace {

// COLLTYPE of Open MPI's coll/base, by number; the coll_tuned_<name>_algorithm parameter's name.
const char* const kCollNames[] = {
    "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw", "barrier", "bcast",
    "exscan",    "gather",     "gatherv",   "reduce",   "reduce_scatter", "reduce_scatter_block", "scan", "scatter",
    "scatterv",  "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
    "neighbor_alltoallw"};
constexpr int64_t kCollCount = sizeof(kCollNames) / sizeof(kCollNames[0]);

struct RulesToken {
  std::string text;
  int line = 0;
};

std::vector<RulesToken> rules_tokens_of(const std::string& text) {
  std::vector<RulesToken> out;
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    for (std::string w; words >> w;) out.push_back({w, n});
  }
  return out;
}

class RulesReader {
 public:
  RulesReader(const std::string& path, std::vector<RulesToken> tokens, LintReport& r)
      : path_(path), tokens_(std::move(tokens)), r_(r) {}

  bool done() const { return at_ >= tokens_.size(); }
  // The line of the number read last.
  int last_line() const { return at_ > 0 ? tokens_[at_ - 1].line : 1; }
  int line() const { return at_ < tokens_.size() ? tokens_[at_].line : (tokens_.empty() ? 1 : tokens_.back().line); }

  // The next integer; nullopt (with a finding) when the file ends or holds something else.
  // `count_line`: the count that promised this entry, which a finding names.
  std::optional<int64_t> next(const std::string& what, const std::string& ends_inside, int count_line = 0) {
    if (done()) {
      r_.findings.push_back({path_, count_line ? count_line : line(),
                             "the file ends where " + what + " should follow (" + ends_inside + ")",
                             "the missing entries, or lower this count to the entries that follow it"});
      return std::nullopt;
    }
    const RulesToken& t = tokens_[at_++];
    char* end = nullptr;
    const long long v = std::strtoll(t.text.c_str(), &end, 10);
    if (*end != '\0') {
      r_.findings.push_back({path_, t.line, "'" + t.text + "' where " + what + " should be: not an integer",
                             "an integer (" + what + "), or '#' before a comment"});
      return std::nullopt;
    }
    return v;
  }
  const std::string& path() const { return path_; }
  LintReport& report() { return r_; }

 private:
  std::string path_;
  std::vector<RulesToken> tokens_;
  size_t at_ = 0;
  LintReport& r_;
};

// One message size rule; false when the file cannot be read on.
bool read_rule(RulesReader& in, const std::string& coll, const OmpiFacts* ompi, int64_t& last_size, int k, int count_line) {
  const int line = in.line();
  const std::string where = fmt::format("{}'s message rule {} of those the count on line {} promises", coll, k + 1, count_line);
  const auto size = in.next("a message size", where, count_line);
  if (!size) return false;
  const auto alg = in.next("an algorithm id", where, count_line);
  if (!alg) return false;
  const auto fan = in.next("a fan-in/out", where, count_line);
  if (!fan) return false;
  const auto seg = in.next("a segment size", where, count_line);
  if (!seg) return false;
  auto& r = in.report();
  if (k > 0 && *size <= last_size) {
    r.findings.push_back({in.path(), line,
                          fmt::format("message size {} is not above the previous rule's {}: Open MPI takes the last "
                                      "rule at or below a size, so rules must ascend",
                                      *size, last_size),
                          "the rules of this communicator size in ascending message size"});
  }
  last_size = *size;
  if (*fan < 0 || *seg < 0) {
    r.findings.push_back({in.path(), line, "a negative fan-in/out or segment size", "0 (Open MPI's default) or a positive number"});
  }
  if (ompi) {
    const auto it = ompi->algorithms.find(coll);
    if (it != ompi->algorithms.end() && !it->second.count(*alg)) {
      r.findings.push_back({in.path(), line,
                            fmt::format("algorithm {} is not one of the installed Open MPI's coll/tuned {} algorithms",
                                        *alg, coll),
                            fmt::format("one of {} (ompi_info --param coll tuned --level 9)", fmt::join(it->second, ", "))});
    }
  }
  return true;
}

bool read_collective(RulesReader& in, const OmpiFacts* ompi, std::set<int64_t>& seen, int c, int count_line) {
  const int id_line = in.line();
  const auto id = in.next("a collective id", fmt::format("collective {} of those line {} promises", c + 1, count_line),
                          count_line);
  if (!id) return false;
  auto& r = in.report();
  std::string coll = fmt::format("collective {}", *id);
  if (*id < 0 || *id >= kCollCount) {
    r.findings.push_back({in.path(), id_line, fmt::format("collective id {} is none of Open MPI's", *id),
                          "an id of coll_base_functions.h (0 allgather, 2 allreduce, 3 alltoall, 7 bcast, 12 "
                          "reduce_scatter, ...)"});
  } else {
    coll = kCollNames[*id];
    if (ompi && !ompi->algorithms.count(coll)) {
      r.findings.push_back({in.path(), id_line, fmt::format("the installed Open MPI's coll/tuned takes no rules for {}", coll),
                            "rules only for collectives with a coll_tuned_<name>_algorithm parameter"});
    }
  }
  if (!seen.insert(*id).second) {
    r.findings.push_back({in.path(), id_line, fmt::format("{} has rules twice; Open MPI keeps one set", coll),
                          "one block per collective"});
  }
  const auto sizes = in.next("a count of communicator sizes", coll);
  if (!sizes) return false;
  const int sizes_line = in.last_line();
  int64_t last_comm = 0;
  for (int64_t s = 0; s < *sizes; ++s) {
    const int line = in.line();
    const auto comm = in.next("a communicator size", fmt::format("{}: {} communicator sizes", coll, *sizes), sizes_line);
    if (!comm) return false;
    if (s > 0 && *comm <= last_comm) {
      r.findings.push_back({in.path(), line,
                            fmt::format("communicator size {} is not above the previous one ({})", *comm, last_comm),
                            "the communicator sizes of a collective in ascending order"});
    }
    last_comm = *comm;
    const auto rules = in.next("a count of message rules", fmt::format("{} at communicator size {}", coll, *comm));
    if (!rules) return false;
    const int rules_line = in.last_line();
    int64_t last_size = 0;
    for (int64_t k = 0; k < *rules; ++k) {
      if (!read_rule(in, coll, ompi, last_size, static_cast<int>(k), rules_line)) return false;
    }
  }
  return true;
}

}  // namespace

const OmpiFacts* LintContext::ompi(std::string& why) {
  if (!ompi_asked_) {
    ompi_asked_ = true;
    if (auto out = run_for_output({"ompi_info", "--param", "coll", "tuned", "--level", "9", "--parsable"}, ompi_why_)) {
      static const std::regex enumerator(R"(coll_tuned_([a-z_]+)_algorithm:enumerator:value:(-?\d+):)");
      OmpiFacts f;
      for (std::sregex_iterator it(out->begin(), out->end(), enumerator), end; it != end; ++it) {
        f.algorithms[(*it)[1].str()].insert(std::stoll((*it)[2].str()));
      }
      if (f.algorithms.empty()) ompi_why_ = "ompi_info lists no coll/tuned algorithm";
      else ompi_ = std::move(f);
    }
  }
  why = ompi_why_;
  return ompi_ ? &*ompi_ : nullptr;
}

void lint_ompi_rules_text(const std::string& path, const std::string& text, LintContext& ctx, LintReport& r) {
  std::vector<RulesToken> tokens = rules_tokens_of(text);
  if (tokens.empty()) return;  // comments only: a bundle's "nothing to load"
  std::string why;
  const OmpiFacts* ompi = ctx.ompi(why);
  if (!ompi) r.notes.push_back(fmt::format("{}: Open MPI algorithm check skipped: {}", path, why));
  RulesReader in(path, std::move(tokens), r);
  const auto colls = in.next("the count of collectives", "the file's first number");
  if (!colls) return;
  const int count_line = in.last_line();
  std::set<int64_t> seen;
  for (int64_t c = 0; c < *colls; ++c) {
    if (!read_collective(in, ompi, seen, static_cast<int>(c), count_line)) return;
  }
  if (!in.done()) {
    r.findings.push_back({path, in.line(),
                          fmt::format("numbers after the {} collective{} the count on line {} declares; Open MPI "
                                      "ignores them",
                                      *colls, *colls == 1 ? "" : "s", count_line),
                          "the count of collectives that the file holds, or remove the extra numbers"});
  }
}

}  // namespace acceltune
