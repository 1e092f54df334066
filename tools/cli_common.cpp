// Helpers the commands share.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tuner/family.hpp"
#include "tools/cli.hpp"
#include "tools/spaces_path.hpp"
#include "tuner/binary.hpp"
#include "tuner/plan.hpp"
#include "probe/links.hpp"
#include "tuner/duration.hpp"
#include "tuner/study.hpp"

namespace acceltune::cli {

namespace fs = std::filesystem;

namespace {

// A param value as a person reads it: byte-valued params with units.
std::string show_value(const Json& v, const std::string& unit) {
  if (unit == "bytes" && v.is_number_integer() && v.get<int64_t>() > 0) return format_bytes(v.get<uint64_t>());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

namespace {
std::string last_failure_message;
}  // namespace

int fail(const Error& e) {
  std::fprintf(stderr, "acceltune: %s\n", e.message.c_str());
  last_failure_message = e.message;
  return e.exit_code();
}

const std::string& last_failure() { return last_failure_message; }

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "?";
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02.0f}s", static_cast<int>(s / 60), std::fmod(s, 60));
  return fmt::format("{}h{:02d}m", static_cast<int>(s / 3600), static_cast<int>(std::fmod(s, 3600) / 60));
}

std::string format_value(double v) {
  if (!std::isfinite(v)) return "-";
  if (std::abs(v) >= 100) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

std::map<std::string, std::string> units_of(const Json& space_definition) {
  std::map<std::string, std::string> u;
  if (space_definition.contains("params")) {
    for (const auto& p : space_definition["params"]) u[p.value("name", "")] = p.value("unit", "");
  }
  return u;
}

// The params where a config differs from the default, or "(default)".
std::string describe_config(const Json& config, const Json& default_config,
                            const std::map<std::string, std::string>& units) {
  std::string out;
  for (const auto& [k, v] : config.items()) {
    if (default_config.contains(k) && default_config[k] == v) continue;
    auto u = units.find(k);
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, show_value(v, u == units.end() ? "" : u->second));
  }
  return out.empty() ? "(default)" : out;
}

void print_efficiency(const Json& study, const BestTable& b, std::FILE* out) {
  const Efficiency e = efficiency_of(study, b);
  std::fprintf(out, "efficiency (inside acceltune, against the link's ceiling): %s\n", e.line().c_str());
  if (e.efficiency) std::fprintf(out, "  ceiling: %s\n", e.ceiling_basis.c_str());
  if (!e.note.empty()) std::fprintf(out, "  note: %s\n", e.note.c_str());
  for (const auto& s : e.suggestions) std::fprintf(out, "  check: %s\n", s.c_str());
}

namespace {

// Why a certified size exports the default: its interval did not lie above 1.0. Wholly below 1 it
// is slower (or within the verdict's no-harm margin), never "no significant gain".
std::string no_gain_text(const SizeBest& s) {
  const std::string m = interval_meaning(s.ci_low.value_or(0), s.ci_high.value_or(INFINITY));
  return m == "no significant difference" ? "no significant gain" : m;
}

// The plan under the table: its size ranges, its job-wide part, its notes and how it was delivered.
void print_plan_lines(const BestTable& b, const std::map<std::string, std::string>& units, std::FILE* out) {
  if (b.ranges.size() > 1 || (b.ranges.size() == 1 && b.sizes.size() > 1)) {
    std::fprintf(out, "ranges:");
    for (const auto& r : b.ranges) {
      // Ranges end just below the next one's first size: print them half-open.
      std::fprintf(out, " [%s, %s) %s;", r.min_bytes == 0 ? "0" : format_bytes(r.min_bytes).c_str(),
                   r.max_bytes == UINT64_MAX ? "max" : format_bytes(r.max_bytes + 1).c_str(),
                   r.is_default ? "default" : describe_config(r.config, b.default_config, units).c_str());
    }
    std::fprintf(out, "\n");
  }
  // The plan's job-wide part: one value for the whole job, chosen over all sizes.
  const std::string job = b.plan.job_is_default ? "(default)" : describe_config(b.plan.job, b.default_config, units);
  std::fprintf(out, "job-wide: %s\n", job == "(default)" ? "the library defaults" : job.c_str());
  for (const auto& n : b.plan.notes) std::fprintf(out, "plan: %s\n", n.c_str());
  const auto advice = application_advice_lines(b);
  if (!advice.empty()) {
    std::fprintf(out, "advice for the application (its own socket options and I/O: no job loads these, so they are "
                      "in no gain column):\n");
    for (const auto& line : advice) std::fprintf(out, "  %s\n", line.c_str());
  }
  if (b.delivery.state == "measured") {
    std::fprintf(out, "delivered: measured through %s (%d rounds, interleaved with the defaults)\n",
                 b.delivery.client.empty() ? "a plain client" : b.delivery.client.c_str(), b.delivery.rounds);
  } else {
    std::fprintf(out, "delivered: not verified: %s\n",
                 b.delivery.why.empty() ? "not measured yet (acceltune verify measures it)" : b.delivery.why.c_str());
  }
}

}  // namespace

void print_best_table(const BestTable& b, const Json& space_definition, std::FILE* out) {
  // Four figures, each named as what it is (docs: "Export plans and delivered gains"): the search's
  // measurements, the certified gain (interleaved with the default inside the kernel), the delivered
  // gain (the export loaded the way a job loads it) and the model's estimate. The best single
  // measurement is never the headline.
  const auto units = units_of(space_definition);
  const std::string unit = b.unit;
  auto delivered_text = [&](const SizeBest& s) -> std::string {
    if (!s.delivered) return "not verified";
    const Delivered& d = *s.delivered;
    return gain_interval_text(d.ratio, d.ci_low, d.ci_high) + (d.slower ? " SLOWER" : "");
  };
  constexpr const char* kCertified = "certified gain [95% interval]";
  constexpr const char* kDelivered = "delivered [95%]";
  if (!b.value_is.empty()) std::fprintf(out, "values: %s %s\n", unit.c_str(), b.value_is.c_str());
  if (b.certified) {
    std::fprintf(out, "%-8s %15s %15s %29s  %-25s %s\n", "size", ("default " + unit).c_str(),
                 ("certified " + unit).c_str(), kCertified, kDelivered, "exported config (trial)");
  } else {
    std::fprintf(out, "%-8s %15s %15s %12s %29s  %-25s %s\n", "size", ("default " + unit).c_str(),
                 ("search " + unit).c_str(), "search ratio", kCertified, kDelivered, "exported config (trial)");
  }
  for (const auto& s : b.sizes) {
    const std::string del = delivered_text(s);
    if (b.certified) {
      if (!s.certified_trial) {
        std::fprintf(out, "%-8s %15s %15s %29s  %-25s %s\n", format_bytes(s.bytes).c_str(),
                     s.default_value ? format_value(*s.default_value).c_str() : "-", "-", "not certified", del.c_str(),
                     "(default: no other config a job loads measured ok)");
        continue;
      }
      const std::string gain = gain_interval_text(*s.certified_ratio, s.ci_low.value_or(0), s.ci_high.value_or(INFINITY));
      // #-1: the plan's job-wide part with the library's per-size choices, not a trial of the search.
      const std::string from = *s.certified_trial >= 0 ? fmt::format("#{}", *s.certified_trial) : "job-wide part";
      // One figure per config and size (exported_figure): the value columns are the exported
      // config's; where the gain column is another trial's, the last column says whose.
      const ExportedFigure f = exported_figure(b, s);
      const std::string chosen = describe_config(s.chosen_config, b.default_config, units);
      std::string cfg;
      if (s.chosen_config == b.default_config) {
        cfg = s.significant ? fmt::format("(default): the gain is {}'s, which did not ship (see plan)", from)
                            : fmt::format("(default) {} from {}", no_gain_text(s), from);
      } else if (s.significant && f.what == "certified medians") {
        cfg = fmt::format("{} ({})", chosen, from);
      } else if (s.significant) {
        cfg = fmt::format("{}: the plan's job-wide part; the gain is {}'s", chosen, from);
      } else {
        cfg = fmt::format("{}: the job-wide part, no significant gain per size", chosen);
      }
      const std::string dv = f.default_value ? format_value(*f.default_value) : "-";
      const std::string bv = f.value ? format_value(*f.value) : "-";
      std::fprintf(out, "%-8s %15s %15s %29s  %-25s %s\n", format_bytes(s.bytes).c_str(), dv.c_str(), bv.c_str(),
                   gain.c_str(), del.c_str(), cfg.c_str());
      continue;
    }
    // Not certified: the recommended config's median from the search, named as such.
    const std::string def = s.default_value ? format_value(*s.default_value) : "-";
    const std::string best = s.best_trial ? format_value(s.best_value) : "-";
    const std::string ratio = s.ratio ? fmt::format("{:.2f}x", *s.ratio) : "-";
    std::string cfg = "no config measured ok";
    if (s.best_trial) {
      const Json& chosen = s.chosen_config.empty() ? s.best_config : s.chosen_config;
      cfg = describe_config(chosen, b.default_config, units);
      cfg += chosen == s.best_config ? fmt::format(" (#{})", *s.best_trial)
                                     : fmt::format(" (the plan's; the search's #{} differs job-wide)", *s.best_trial);
    }
    std::fprintf(out, "%-8s %15s %15s %12s %29s  %-25s %s\n", format_bytes(s.bytes).c_str(), def.c_str(), best.c_str(),
                 ratio.c_str(), "not certified", del.c_str(), cfg.c_str());
  }
  if (!b.certified) {
    std::fprintf(out, "%s\n",
                 b.recommended_by == "posterior-mean"
                     ? "(search: the recommended config's median in the search and its ratio to the default's; not "
                       "certified)"
                     : "(search: the best single measurement in the search and its ratio to the default's; not "
                       "certified, and with noise often a lucky one)");
  }
  // Where the noise-aware recommendation is not the best single measurement, say so.
  for (const auto& s : b.sizes) {
    if (b.recommended_by != "posterior-mean" || !s.best_trial || !s.observed_trial || *s.best_trial == *s.observed_trial) {
      continue;
    }
    std::string estimate = s.predicted ? format_value(*s.predicted) : "-";
    if (s.predicted && s.predicted_low && s.predicted_high) {
      estimate += fmt::format(" [{}, {}]", format_value(*s.predicted_low), format_value(*s.predicted_high));
    }
    std::fprintf(out, "%-8s recommended #%lld (model estimate %s) over the best single measurement #%lld (%s)\n",
                 format_bytes(s.bytes).c_str(), static_cast<long long>(*s.best_trial), estimate.c_str(),
                 static_cast<long long>(*s.observed_trial), format_value(s.observed_value).c_str());
  }
  print_plan_lines(b, units, out);
}


Json search_defaults(const Space& space) {
  if (space.extra().contains("search") && space.extra()["search"].is_object()) return space.extra()["search"];
  return Json::object();
}

void add_placement_options(CLI::App* command, PlacementArgs& args) {
  command->add_flag("--netns", args.netns,
                    "run the two ends of a transfer kernel in two network namespaces that acceltune creates, joins "
                    "by a veth pair and removes afterwards (needs root); this makes the link's MTU tunable");
  command->add_option("--peer", args.peer,
                      "HOST:PORT of an 'acceltune serve' on another host: the far end of a transfer kernel");
  command->add_option("--secret-file", args.secret_file,
                      "with --peer: a file holding the secret the serve was given (readable by its owner only); "
                      "default: $ACCELTUNE_SECRET_FILE, else $ACCELTUNE_SECRET");
}

void add_ranks_option(CLI::App* command, int& ranks) {
  command->add_option("--ranks", ranks,
                      "ranks of a space whose kernel runs them (mpi-allreduce, the nccl spaces), instead of the "
                      "space's own (mpi-allreduce: 2)")
      ->check(CLI::Range(1, 1 << 20));
}

Json with_ranks(Json fields, int ranks) {
  if (ranks <= 0) return fields;
  if (!fields.is_object()) fields = Json::object();
  fields["ranks"] = ranks;
  return fields;
}

Expected<Prepared> prepare(const std::string& space_arg, const std::string& sizes_arg, const PlacementArgs& placement,
                           bool to_tune, const Json& space_fields) {
  if (space_arg.empty()) return input_error("no space given: pass --space NAME (acceltune spaces lists them)");
  ACCELTUNE_TRY_ASSIGN(Space space, resolve_space(space_arg, space_fields));
  // The placement is part of what the study measures, so it is stored with the space.
  if (placement.netns && !placement.peer.empty()) return input_error("--netns and --peer exclude each other; choose one");
  // The secret reaches the kernel, its workers and its children through the environment.
  if (!placement.secret_file.empty()) ::setenv("ACCELTUNE_SECRET_FILE", placement.secret_file.c_str(), 1);
  if (placement.netns) space.set_extra("placement", "netns");
  if (!placement.peer.empty()) {
    space.set_extra("placement", "peer");
    space.set_extra("peer", placement.peer);
  }
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Kernel> kernel, to_tune ? make_kernel_to_tune(space) : make_kernel(space));
  Workload w;
  w.kernel = space.kernel();
  w.operation = space.operation();
  // Kernels that run across processes record their rank count in the space (mpi-coll).
  if (space.extra().contains("ranks") && space.extra()["ranks"].is_number_integer()) {
    w.ranks = space.extra()["ranks"].get<int64_t>();
  }
  if (!kernel->sized()) {
    if (!sizes_arg.empty()) {
      return input_error("kernel '{}' has no message sizes; drop --sizes", space.kernel());
    }
    w.sizes = {0};
  } else if (!sizes_arg.empty()) {
    auto sizes = parse_sizes(sizes_arg);
    if (!sizes) return input_error("--sizes: {}", sizes.error().message);
    w.sizes = std::move(*sizes);
  } else {
    w.sizes = space.sizes();
  }
  if (w.sizes.empty()) {
    return input_error("{}: the space lists no message sizes; pass --sizes such as 64K,1M,16M", space.source());
  }
  std::sort(w.sizes.begin(), w.sizes.end());
  w.sizes.erase(std::unique(w.sizes.begin(), w.sizes.end()), w.sizes.end());
  return Prepared{std::move(space), std::move(kernel), std::move(w)};
}


CLI::Option* add_duration_option(CLI::App* command, const std::string& name, double& seconds, const std::string& help,
                                 const DurationBounds& bounds) {
  auto* option = command->add_option_function<std::string>(
      name,
      [name, &seconds, bounds](const std::string& text) {
        const auto d = parse_duration(text, true);
        if (!d) {
          throw CLI::ValidationError(fmt::format("{} '{}' is not a duration (use {})", name, text, kDurationForms));
        }
        if (*d == 0 && !bounds.zero_allowed) {
          throw CLI::ValidationError(fmt::format("{} '{}' must be longer than 0 (use {})", name, text, kDurationForms));
        }
        if (*d != 0 && (*d < bounds.min_seconds || *d > bounds.max_seconds)) {
          throw CLI::ValidationError(fmt::format("{} '{}' is out of range: give {:g} to {:g} seconds", name, text,
                                                 bounds.min_seconds, bounds.max_seconds));
        }
        seconds = *d;
      },
      fmt::format("{}; {}", help, kDurationForms));
  option->type_name("DURATION");
  return option;
}

std::vector<std::string> worker_command() {
  auto exe = acceltune_binary();
  return {exe ? *exe : running_program(), "__worker"};
}

Expected<StudyData> load_study_best(const std::string& dir) {
  auto s = load_study_dir(dir, StudyParts::best);
  if (s && !s->finished) {
    std::fprintf(stderr, "acceltune: %s has no best.json yet; computing it from trials.jsonl\n", dir.c_str());
  }
  return s;
}

namespace {

std::string timestamp_for_path() {
  std::string t = utc_now_iso8601();  // 2026-12-02T17:52:23Z
  t.erase(std::remove(t.begin(), t.end(), ':'), t.end());
  t.erase(std::remove(t.begin(), t.end(), '-'), t.end());
  if (!t.empty() && t.back() == 'Z') t.pop_back();
  return t;  // 20261202T175223
}

}  // namespace

std::filesystem::path fresh_study_dir(const std::string& space_name) {
  const std::filesystem::path base =
      std::filesystem::path(kResultsRoot) / fmt::format("{}-{}", space_name, timestamp_for_path());
  std::filesystem::path p = base;
  for (int i = 2; std::filesystem::exists(p); ++i) p = base.string() + fmt::format("-{}", i);
  return p;
}

}  // namespace acceltune::cli
