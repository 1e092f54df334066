// acceltune bringup: one command that tunes every path this node has and writes one bundle for
// its jobs. It probes, picks the families the node can run (tools/bringup/families.hpp), runs
// each study as an `acceltune search` of its own (with certification and delivered gains) within
// its share of the time limit, then merges the plans into one bundle (tools/bringup/bundle.hpp)
// and one report page.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kernels/shared/child_process.hpp"
#include "results/compare.hpp"
#include "results/report_html.hpp"
#include "tools/bringup/bundle.hpp"
#include "tools/bringup/families.hpp"
#include "tools/bundle_input.hpp"
#include "tools/cli.hpp"
#include "tools/spaces_path.hpp"
#include "tuner/atomic_file.hpp"
#include "tuner/binary.hpp"
#include "tuner/cancel.hpp"
#include "tuner/plan.hpp"
#include "probe/fingerprint.hpp"
#include "probe/links.hpp"
#include "tuner/process_guard.hpp"
#include "tuner/study.hpp"

extern char** environ;

namespace acceltune::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The share of the time limit the studies get; the merged bundle's measurement has the rest.
constexpr double kStudiesShare = 0.85;

struct BringupArgs {
  double time_limit_seconds = 600;
  std::string out, only, skip;
  int certify_top = 1;
  int certify_rounds = 4;
  int verify_rounds = 3;
  bool no_netns = false;
};

// What became of one study.
struct Run {
  bringup::Study plan;
  std::string dir;
  std::string state;  // done, failed, cancelled, not started
  std::string why;
  double seconds = 0, limit = 0;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size() && !s.empty()) {
    const size_t j = s.find(',', i);
    std::string part = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (!part.empty()) out.push_back(part);
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

int64_t count_lines(const fs::path& p) {
  std::ifstream f(p);
  int64_t n = 0;
  for (std::string line; std::getline(f, line);) n += !line.empty();
  return n;
}

// The last "acceltune: ..." line a failed search printed, else its last line.
std::string failure_line(const std::string& err) {
  std::string last, tagged;
  size_t i = 0;
  while (i < err.size()) {
    size_t j = err.find('\n', i);
    if (j == std::string::npos) j = err.size();
    std::string line = err.substr(i, j - i);
    const size_t cr = line.rfind('\r');
    if (cr != std::string::npos) line = line.substr(cr + 1);
    if (!line.empty()) last = line;
    if (line.rfind("acceltune: ", 0) == 0 && line.find("warning:") == std::string::npos) tagged = line.substr(11);
    i = j + 1;
  }
  return tagged.empty() ? last : tagged;
}

// Runs one study as `acceltune search` in a process group of its own, showing progress; a
// cancellation of this command is passed on once (the search then keeps what it finished).
Run run_study_search(const bringup::Study& s, const fs::path& bundle, double limit, double overall_left,
                     const BringupArgs& a, size_t index, size_t count, bool tty) {
  Run r;
  r.plan = s;
  r.limit = limit;
  const fs::path dir = bundle / "studies" / s.space;
  r.dir = dir.string();
  std::string space_arg = s.space;
  if (!s.space_override.is_null()) {
    fs::path path;
    for (const auto& e : shipped_spaces()) {
      if (e.name == s.space) path = e.path;
    }
    if (path.empty()) {
      r.state = "failed";
      r.why = fmt::format("the shipped space {} is not installed", s.space);
      return r;
    }
    Json def = Json::parse(read_text(path), nullptr, false);
    for (const auto& [k, v] : s.space_override.items()) def[k] = v;
    const fs::path copy = bundle / "spaces" / (s.space + ".json");
    if (Status w = write_file_atomically(copy, def.dump(2) + "\n"); !w) {
      r.state = "failed";
      r.why = w.error().message;
      return r;
    }
    space_arg = copy.string();
  }
  auto self = acceltune_binary();
  if (!self) {
    r.state = "failed";
    r.why = self.error().message;
    return r;
  }
  std::vector<std::string> argv = {*self, "search", "--space", space_arg, "--out", dir.string(), "--time-limit",
                                   fmt::format("{:.1f}", limit), "--certify-top", std::to_string(a.certify_top),
                                   "--certify-rounds", std::to_string(a.certify_rounds),
                                   "--verify-rounds", std::to_string(a.verify_rounds)};
  argv.insert(argv.end(), s.args.begin(), s.args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  ChildOptions co;
  co.own_group = true;
  co.grace_seconds = 20;
  const auto t0 = Clock::now();
  auto child = Child::start(argv, env, co);
  if (!child) {
    r.state = "failed";
    r.why = child.error().message;
    return r;
  }
  Child::Result res;
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    res = (*child)->finish(Clock::now() + std::chrono::hours(24 * 365));
    done = true;
  });
  bool forwarded = false;
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (cancel_requested() && !forwarded) {
      (*child)->signal(SIGINT);
      forwarded = true;
    }
    if (tty) {
      const double el = std::chrono::duration<double>(Clock::now() - t0).count();
      const char* phase = el < limit * (1 - kCertifyShare - kDeliverShare) ? "searching" : "certifying and verifying";
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %s %s: %lld trials, %s of %s; %s left overall", index + 1, count,
                   s.space.c_str(), phase, static_cast<long long>(count_lines(dir / "trials.jsonl")),
                   format_seconds(el).c_str(), format_seconds(limit).c_str(),
                   format_seconds(std::max(0.0, overall_left - std::min(el, limit))).c_str());
      std::fflush(stderr);
    }
  }
  waiter.join();
  if (tty) std::fprintf(stderr, "\r\033[K");
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::error_code ec;
  fs::create_directories(bundle / "logs", ec);
  (void)write_file_atomically(bundle / "logs" / (s.space + ".log"),
                              "$ " + argv_text(argv) + "\n" + res.out + (res.err.empty() ? "" : "\n--- stderr\n" + res.err));
  if (res.exit_code == 0) {
    r.state = "done";
  } else if (forwarded || res.exit_code == 130 || res.exit_code == 143) {
    r.state = "cancelled";
    r.why = "cancelled; its finished trials are kept";
  } else {
    // Why, from the search's own record; from its stderr only when it left none (it crashed).
    r.state = "failed";
    const auto outcome = read_search_outcome(dir.string());
    r.why = outcome && outcome->state == "failed" && !outcome->why.empty() ? outcome->why : failure_line(res.err);
    if (r.why.empty()) r.why = fmt::format("search exited with code {}", res.exit_code);
  }
  return r;
}

Json delivered_json(const std::map<uint64_t, Delivered>& sizes) {
  Json out = Json::array();
  for (const auto& [bytes, d] : sizes) {
    out.push_back(Json{{"bytes", bytes}, {"size", format_bytes(bytes)}, {"ratio", d.ratio}, {"ci_low", d.ci_low},
                       {"ci_high", std::isfinite(d.ci_high) ? Json(d.ci_high) : Json(nullptr)}, {"rounds", d.rounds},
                       {"slower", d.slower}, {"faster", d.faster}});
  }
  return out;
}

// The study's own delivered figure at its best size, or why none; a plan that fell back to the
// defaults after a delivered measurement says what that measurement found.
std::string own_delivered(const BestTable& b) {
  if (b.delivery.state != "measured") {
    for (const auto& n : b.plan.notes) {
      const size_t from = n.find(" delivered "), to = n.find(": falls back");
      if (from != std::string::npos && to != std::string::npos && to > from) {
        return "fell back:" + n.substr(from, to - from);
      }
    }
    return "not verified";
  }
  const std::string text = delivered_range_text(delivered_sizes(b));
  if (text.empty()) return "not measured";
  // A figure of a plan that did not ship says so first: "undecided: 0.71x [0.00, 1353.82] at 1M".
  const std::string& v = b.delivery.verdict;
  return v.empty() || v == "ships" ? text : v + ": " + text;
}

std::string bundle_delivered_text(const bringup::BundleDelivery& d) {
  if (d.state != "measured") return "not verified: " + d.why;
  const std::string text = delivered_range_text(d.sizes);
  return text.empty() ? "not measured" : text;
}

// What the studies left: the runs, the finished studies read back as the report and compare read
// them (data_of_run maps a run to its study, SIZE_MAX where none finished), their contributions to
// the bundle and the merged bundle.
struct Outcome {
  std::vector<Run> runs;
  std::vector<StudyData> data;
  std::vector<size_t> data_of_run;
  std::vector<bringup::Contribution> contributions;
  bringup::Bundle merged;

  const StudyData* study_of(size_t run) const { return data_of_run[run] == SIZE_MAX ? nullptr : &data[data_of_run[run]]; }
  std::string certified_of(const StudyData& d) const {
    for (const auto& c : contributions) {
      if (c.study == &d) return c.gain;
    }
    return "";
  }
};

void print_plan(const std::vector<bringup::Family>& families, size_t studies, double limit, const fs::path& bundle) {
  std::printf("acceltune bringup: %zu studies and their bundle within %s; bundle %s\n", studies,
              format_seconds(limit).c_str(), bundle.string().c_str());
  for (const auto& f : families) {
    if (f.skipped.empty()) {
      std::string names;
      for (const auto& s : f.studies) names += (names.empty() ? "" : ", ") + s.space;
      std::printf("  %-5s %s: %s\n", f.name.c_str(), f.what.c_str(), names.c_str());
    } else {
      std::printf("  %-5s skipped: %s\n", f.name.c_str(), f.skipped.c_str());
    }
  }
  std::fflush(stdout);
}

// Each study in turn, within its share of the time left until `end`: each search's time limit
// bounds its whole command, certification and delivered measurement included.
std::vector<Run> run_studies(const std::vector<bringup::Study>& studies, const fs::path& bundle, const BringupArgs& a,
                             Clock::time_point end, bool tty) {
  std::vector<Run> runs;
  for (size_t i = 0; i < studies.size(); ++i) {
    const double left = std::max(0.0, std::chrono::duration<double>(end - Clock::now()).count());
    if (cancel_requested()) {
      Run r;
      r.plan = studies[i];
      r.state = "not started";
      r.why = "bring-up was cancelled first";
      runs.push_back(r);
      continue;
    }
    const std::vector<bringup::Study> remaining(studies.begin() + static_cast<long>(i), studies.end());
    const double share = bringup::share_seconds(remaining, left);
    Run r = run_study_search(studies[i], bundle, share, left, a, i, studies.size(), tty);
    std::printf("  %s: %s%s (%s)\n", studies[i].space.c_str(), r.state.c_str(), r.why.empty() ? "" : (": " + r.why).c_str(),
                format_seconds(r.seconds).c_str());
    std::fflush(stdout);
    runs.push_back(r);
  }
  return runs;
}

// The finished studies read back, and what each brings to the bundle.
void read_back(Outcome& o, const fs::path& bundle) {
  o.data.reserve(o.runs.size());
  o.data_of_run.assign(o.runs.size(), SIZE_MAX);
  for (size_t i = 0; i < o.runs.size(); ++i) {
    if (o.runs[i].state != "done") continue;
    auto d = load_study_dir(o.runs[i].dir);
    if (!d) {
      o.runs[i].state = "failed";
      o.runs[i].why = d.error().message;
      continue;
    }
    o.data_of_run[i] = o.data.size();
    o.data.push_back(std::move(d).value());
  }
  for (auto& d : o.data) {
    if (d.best.trials_ok == 0) continue;
    auto c = bringup::contribution_of(d, bundle.string());
    if (!c) {
      std::fprintf(stderr, "acceltune: %s: its plan cannot join the bundle: %s\n", d.best.space.c_str(),
                   c.error().message.c_str());
      continue;
    }
    o.contributions.push_back(std::move(c).value());
  }
}

std::string bundle_header(const Json& probe, int cancelled_by) {
  std::string host;
  if (probe.contains("host") && probe["host"].is_string()) host = probe["host"].get<std::string>();
  if (probe.contains("host") && probe["host"].is_object()) host = probe["host"].value("hostname", "");
  std::string header = fmt::format("# acceltune bring-up bundle of {} (fingerprint {}), {}\n",
                                   host.empty() ? "this node" : host, probe.value("id", "?"), utc_now_iso8601());
  if (cancelled_by) {
    header += fmt::format("# PARTIAL: bring-up was cancelled by {}; only the studies finished before are in it\n",
                          signal_name(cancelled_by));
  }
  return header;
}

// The bundle's files; first the per-size ones (each study's plan file, the NCCL tables one after
// another), written before the merged measurement because the bundle's environment names them.
// acceltune.env's header also carries the fingerprint's fields, which the loader checks this
// machine against.
Status write_bundle(const std::vector<bringup::Family>& families, Outcome& o, const fs::path& bundle,
                    const std::string& header, const Json& probe, const BringupArgs& a, Clock::time_point deadline,
                    bool tty) {
  for (const auto& [name, text] : bringup::plan_files_text(families, o.contributions, header)) {
    ACCELTUNE_TRY(write_file_atomically(bundle / name, text));
  }
  bringup::MergeOptions mo;
  mo.rounds = a.verify_rounds;
  mo.deadline = deadline;
  if (tty) {
    mo.progress = [](const std::string& what) { std::fprintf(stderr, "\r\033[K%s", what.c_str()); };
  }
  o.merged = bringup::merge_and_verify(o.contributions, mo);
  if (tty) std::fprintf(stderr, "\r\033[K");
  ACCELTUNE_TRY(write_file_atomically(bundle / "acceltune.env", bringup::env_file_text(o.merged, header + fingerprint_header(Json{{"fingerprint", probe}}))));
  ACCELTUNE_TRY(write_file_atomically(bundle / "job.sh", bringup::job_script_text(o.merged), {.executable = true}));
  for (const auto& f : bringup::merged_files_text(families, o.data, o.merged, header)) {
    ACCELTUNE_TRY(write_file_atomically(bundle / f.name, f.text, {.executable = f.script}));
  }
  return {};
}

// bringup.json's families: what ran, what was skipped, the gains.
Json families_json(const std::vector<bringup::Family>& families, const Outcome& o, const fs::path& bundle) {
  std::error_code ec;
  Json fams = Json::array();
  for (const auto& f : families) {
    Json jf = Json{{"name", f.name}, {"what", f.what}, {"skipped", f.skipped.empty() ? Json(nullptr) : Json(f.skipped)}};
    Json js = Json::array();
    for (size_t i = 0; i < o.runs.size(); ++i) {
      const Run& r = o.runs[i];
      if (r.plan.family != f.name) continue;
      Json s = Json{{"space", r.plan.space}, {"dir", fs::relative(r.dir.empty() ? bundle : fs::path(r.dir), bundle, ec).string()},
                    {"state", r.state}, {"why", r.why}, {"seconds", r.seconds}, {"time_limit_seconds", r.limit}};
      if (const StudyData* d = o.study_of(i)) {
        s["trials"] = d->best.trials;
        s["trials_ok"] = d->best.trials_ok;
        s["delivered_own"] = own_delivered(d->best);
        s["efficiency"] = efficiency_of(d->study, d->best).to_json();
        if (const std::string gain = o.certified_of(*d); !gain.empty()) s["certified"] = gain;
        for (const auto& bd : o.merged.delivered) {
          if (bd.study != d->best.space) continue;
          s["bundle"] = Json{{"state", bd.state}, {"why", bd.why}, {"text", bundle_delivered_text(bd)},
                             {"sizes", delivered_json(bd.sizes)}};
        }
      }
      js.push_back(s);
    }
    jf["studies"] = js;
    fams.push_back(jf);
  }
  return fams;
}

// One study's row of the terminal table; a study whose params no library reads goes to `advice`.
void print_row(const Run& r, const StudyData& d, const Outcome& o, std::vector<std::string>& advice) {
  std::string cert = o.certified_of(d), bund = "-";
  if (cert.empty()) cert = "-";
  const FamilyInfo* family = family_of_kernel(d.best.kernel);
  if (family && !family->advice.empty()) {
    // The size with the largest gain over the default (certified where it was), and its config.
    const auto gain = [](const SizeBest& z) { return z.certified_ratio ? *z.certified_ratio : z.ratio.value_or(0); };
    const SizeBest* top = nullptr;
    for (const auto& z : d.best.sizes) {
      if (gain(z) > 0 && (!top || gain(z) > gain(*top))) top = &z;
    }
    advice.push_back(fmt::format("  {}: {}", d.best.space, family->advice));
    // The config and its figure at that size: the certified winner where significant, else the
    // search's best with what the search measured.
    if (top) {
      const bool proven = top->significant && top->certified_ratio;
      const std::string figure =
          proven ? "certified " + gain_interval_text(*top->certified_ratio, top->ci_low.value_or(0),
                                                     top->ci_high.value_or(INFINITY))
                 : fmt::format("{:.2f}x the defaults observed in the search, not certified", top->ratio.value_or(0));
      advice.push_back(fmt::format("    best at {}: {}; {}", format_bytes(top->bytes),
                                   (proven ? top->chosen_config : top->best_config).dump(), figure));
    } else {
      advice.push_back("    no config measured ok");
    }
    std::printf("%-6s %-15s %-7lld %s\n", r.plan.family.c_str(), r.plan.space.c_str(),
                static_cast<long long>(d.best.trials), "a check of its path, not a gain a job loads: see advice below");
    return;
  }
  for (const auto& bd : o.merged.delivered) {
    if (bd.study == d.best.space) bund = bundle_delivered_text(bd);
  }
  // The application's own settings (tcp-stream's streams, write size): advice, never a gain column.
  const auto app = application_advice_lines(d.best);
  if (!app.empty()) {
    advice.push_back(fmt::format("  {}: the application's own settings; the gain columns above are the job-wide part "
                                 "alone",
                                 d.best.space));
    for (const auto& line : app) advice.push_back("    " + line);
  }
  std::printf("%-6s %-15s %-7lld %-38s %-30s %s\n", r.plan.family.c_str(), r.plan.space.c_str(),
              static_cast<long long>(d.best.trials), cert.c_str(), own_delivered(d.best).c_str(), bund.c_str());
}

// The terminal table, the ceilings, the advice and where the bundle is.
void print_summary(const std::vector<bringup::Family>& families, const Outcome& o, const fs::path& bundle,
                   double seconds) {
  std::printf("\n%-6s %-15s %-7s %-38s %-30s %s\n", "family", "study", "trials", "certified (search)",
              "delivered (own plan)", "delivered (bundle)");
  std::vector<std::string> advice;  // studies whose params no library reads: shown apart from the gains
  for (size_t i = 0; i < o.runs.size(); ++i) {
    const Run& r = o.runs[i];
    if (const StudyData* d = o.study_of(i)) {
      print_row(r, *d, o, advice);
    } else {
      std::printf("%-6s %-15s %s: %s\n", r.plan.family.c_str(), r.plan.space.c_str(), r.state.c_str(), r.why.c_str());
    }
  }
  for (const auto& f : families) {
    if (!f.skipped.empty()) std::printf("%-6s skipped: %s\n", f.name.c_str(), f.skipped.c_str());
  }
  std::printf("\nagainst each link's ceiling (certified figures; %s):\n", verdict_thresholds_text().c_str());
  for (size_t i = 0; i < o.runs.size(); ++i) {
    const StudyData* d = o.study_of(i);
    if (!d) continue;
    const Efficiency e = efficiency_of(d->study, d->best);
    std::printf("  %-15s %s\n", d->best.space.c_str(), e.short_text().c_str());
    for (const auto& x : e.suggestions) std::printf("  %-15s   check: %s\n", "", x.c_str());
  }
  if (!advice.empty()) {
    std::printf("\nadvice (no job loads these; for programs that do this work themselves):\n");
    for (const auto& line : advice) std::printf("%s\n", line.c_str());
  }
  for (const auto& n : o.merged.notes) std::printf("note: %s\n", n.c_str());
  std::printf("\nbundle: %s (%s)\n", bundle.string().c_str(), format_seconds(seconds).c_str());
  std::printf("  job.sh COMMAND...   runs a job with it, e.g. %s/job.sh mpirun -np 8 ./app\n", bundle.string().c_str());
  std::string files = "acceltune.env";
  for (const auto& [family, f] : families_in_order()) {
    if (!f->listed) continue;  // a family used only by tests
    for (const auto& file : f->bundle_files) files += ", " + file.name + (file.script ? " (review, run as root)" : "");
  }
  std::printf("  %s, report.html\n", files.c_str());
  std::printf("figures: certified = measured inside acceltune; delivered = a plain job of the family with the files "
              "loaded, against its defaults\n");
}

// A fresh bundle folder with its sub-folders; an error when it already holds files.
Status make_bundle_dir(const fs::path& bundle) {
  std::error_code ec;
  if (fs::exists(bundle, ec) && !fs::is_empty(bundle, ec)) {
    return input_error("--out {} already holds files; bring-up writes a new bundle (choose another folder)",
                       bundle.string());
  }
  for (const char* sub : {"studies", "spaces", "logs"}) {
    fs::create_directories(bundle / sub, ec);
    if (ec) return runtime_error("{}: cannot create: {}", (bundle / sub).string(), ec.message());
  }
  return {};
}

int cmd_bringup(const BringupArgs& a) {
  const double limit = a.time_limit_seconds;
  const auto started = Clock::now();
  const std::string started_at = utc_now_iso8601();
  const Json probe = probe_fingerprint();
  const bringup::NodeFacts node = bringup::node_facts(probe, !a.no_netns);
  auto families = bringup::pick_families(node, split_list(a.only), split_list(a.skip));
  if (!families) return fail(families.error());
  std::vector<bringup::Study> studies = bringup::studies_to_run(*families);
  if (studies.empty()) return fail(input_error("no family is left to tune (see --only and --skip)"));
  const double minimum = bringup::minimum_seconds(studies) / kStudiesShare;
  if (limit < minimum) {
    return fail(input_error("--time-limit {} is too short to measure even the defaults of the {} studies this node "
                            "runs: give at least {} (or fewer families with --only)",
                            format_seconds(limit), studies.size(), format_seconds(minimum)));
  }
  // The studies share most of the limit; the merged bundle's measurement and the files the rest.
  const auto at = [&](double seconds) {
    return started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const Clock::time_point studies_end = at(limit * kStudiesShare), merge_end = at(std::max(0.0, limit - 2.0));
  const fs::path bundle = a.out.empty() ? fresh_study_dir("bringup") : fs::path(a.out);
  if (Status st = make_bundle_dir(bundle); !st) return fail(st.error());
  install_cancel_handlers();
  auto guard = ProcessGuard::start();
  if (!guard) return fail(guard.error());
  const bool tty = stderr_is_terminal();

  print_plan(*families, studies.size(), limit, bundle);
  Outcome o;
  o.runs = run_studies(studies, bundle, a, studies_end, tty);
  const int cancelled_by = cancel_requested() ? cancel_signal() : 0;
  read_back(o, bundle);
  const std::string header = bundle_header(probe, cancelled_by);
  if (Status st = write_bundle(*families, o, bundle, header, probe, a, merge_end, tty); !st) return fail(st.error());

  // bringup.json: what ran, what was skipped, the gains, the bundle's lines.
  Json summary = Json::object();
  summary["schema"] = 1;
  summary["started"] = started_at;
  summary["finished"] = utc_now_iso8601();
  summary["seconds"] = std::chrono::duration<double>(Clock::now() - started).count();
  summary["time_limit_seconds"] = limit;
  summary["partial"] = cancelled_by != 0;
  summary["cancelled_by"] = cancelled_by ? Json(signal_name(cancelled_by)) : Json(nullptr);
  summary["fingerprint"] = probe;
  Json links = Json::array();
  for (const auto& c : link_ceilings(probe)) links.push_back(c.to_json());
  summary["links"] = links;
  summary["families"] = families_json(*families, o, bundle);
  Json env = Json::array();
  for (const auto& l : o.merged.env) {
    env.push_back(Json{{"var", l.var}, {"value", l.value}, {"from", l.from}, {"why", l.why}, {"left_out", l.left_out}});
  }
  summary["env"] = env;
  summary["notes"] = o.merged.notes;
  summary["lint"] = lint_bundle(bundle.string());  // its own files, as `acceltune lint` reads them
  if (Status w = write_file_atomically(bundle / "bringup.json", summary.dump(2) + "\n"); !w) return fail(w.error());
  if (Status w = write_page((bundle / "report.html").string(), bringup_html(summary, o.data)); !w) return fail(w.error());

  print_summary(*families, o, bundle, summary["seconds"].get<double>());
  for (const auto& f : summary["lint"]) std::printf("lint: %s\n", f.get<std::string>().c_str());
  if (cancelled_by) {
    std::fprintf(stderr, "acceltune: bring-up cancelled by %s; the bundle holds the studies finished before (partial)\n",
                 signal_name(cancelled_by).c_str());
    return 128 + cancelled_by;
  }
  return 0;
}

}  // namespace

void add_bringup_command(CLI::App& app, CommandList& list) {
  auto a = std::make_shared<BringupArgs>();
  auto* cmd = app.add_subcommand(
      "bringup",
      "tune every path this node has (host memory, TCP, UCX, MPI, CUDA, NCCL, RDMA) and write one bundle for its jobs");
  add_duration_option(cmd, "--time-limit", a->time_limit_seconds,
                      "the whole command's time (default 10m): each study's search, certification and delivered "
                      "measurement within its share, then the merged bundle's measurement; what the limit left "
                      "unproven falls back to the defaults and is said");
  cmd->add_option("--out", a->out, "the bundle folder (default: a new one under acceltune-results/)");
  cmd->add_option("--only", a->only, "tune only these families (comma-separated: " + fmt::format("{}", fmt::join(bringup::family_names(), ",")) + ")");
  cmd->add_option("--skip", a->skip, "leave these families out (comma-separated)");
  cmd->add_option("--certify-top", a->certify_top,
                  "candidates per size each study certifies against the default (default 1: the time goes to "
                  "the delivered measurements)");
  cmd->add_option("--certify-rounds", a->certify_rounds, "rounds of each study's certification (default 4)");
  cmd->add_option("--verify-rounds", a->verify_rounds,
                  "rounds of each delivered measurement, per study and for the merged bundle (default 3)");
  cmd->add_flag("--no-netns", a->no_netns, "measure TCP over loopback even where network namespaces can be made");
  cmd->footer(
      "The bundle: studies/ (one study per space), acceltune.env (every job-wide variable, one value each, with the\n"
      "study and gain behind it), ucx.env, ompi-rules.conf, nccl-tuner.conf, tcp-settings.sh (reviewed by you, run\n"
      "as root; never run by acceltune), job.sh (BUNDLE/job.sh mpirun -np 8 ./app), report.html, bringup.json.\n"
      "Ctrl-C keeps the finished studies and writes the bundle from them, marked partial.\n"
      "Exit codes: 0 done, 1 runtime failure, 2 bad input (a time limit below the minimum names it),\n"
      "128+signal when cancelled.");
  list.add(cmd, [a] { return cmd_bringup(*a); });
}

}  // namespace acceltune::cli
