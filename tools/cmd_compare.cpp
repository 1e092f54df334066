// acceltune compare: studies of one space from different machines or hardware generations, side by
// side.
#include <algorithm>

#include "results/compare.hpp"
#include "results/report_html.hpp"
#include "tools/bundle_input.hpp"
#include "tools/cli.hpp"
#include "probe/links.hpp"

namespace acceltune::cli {
namespace {

std::string ratio(const std::optional<double>& v) { return v ? fmt::format("{:.2f}x", *v) : "-"; }

std::string values_line(const std::vector<Json>& values, const std::vector<CompareStudy>& studies,
                        const std::string& unit) {
  std::string out;
  for (size_t k = 0; k < values.size() && k < studies.size(); ++k) {
    out += fmt::format("{}{} {}", k == 0 ? "" : " | ", studies[k].label,
                       values[k].is_null() ? "(absent)" : show_param_value(values[k], unit));
  }
  return out;
}

void print_comparison(const Comparison& c, const std::vector<StudyData>& studies) {
  std::printf("compare: %zu studies, kernel %s (%s), values in %s\n", c.studies.size(), c.studies[0].kernel.c_str(),
              c.studies[0].operation.c_str(), c.unit.c_str());
  for (const auto& s : c.studies) {
    std::string cores = s.logical_cores ? fmt::format(", {} cores", s.logical_cores) : "";
    if (s.usable_cores && s.usable_cores != s.logical_cores) cores += fmt::format(" ({} usable)", s.usable_cores);
    std::printf("  %s %s: space %s, fingerprint %s, host %s, %s%s, %lld trials (%lld ok)%s%s\n", s.label.c_str(),
                s.dir.c_str(), s.space.c_str(), s.fingerprint_id.empty() ? "-" : s.fingerprint_id.c_str(),
                s.host.empty() ? "-" : s.host.c_str(), s.cpu_model.empty() ? "cpu ?" : s.cpu_model.c_str(),
                cores.c_str(), static_cast<long long>(s.trials), static_cast<long long>(s.trials_ok),
                s.certified ? ", certified" : "", s.finished ? "" : ", still running or stopped");
  }
  const std::string first = c.studies[0].label;
  auto interval = [](double r, const std::optional<double>& lo, const std::optional<double>& hi) {
    return fmt::format("{:.2f}x [{}, {}]", r, lo && std::isfinite(*lo) ? fmt::format("{:.2f}", *lo) : "-",
                       hi && std::isfinite(*hi) ? fmt::format("{:.2f}", *hi) : "-");
  };
  for (size_t i = 0; i < c.sizes.size(); ++i) {
    std::printf("\nsize %-8s %12s %12s %11s  %-26s %-25s %13s %14s\n", format_bytes(c.sizes[i]).c_str(), "default",
                "search", "search gain", "certified [95%]", "delivered [95%]", ("search/" + first).c_str(),
                ("default/" + first).c_str());
    for (size_t k = 0; k < c.cells[i].size(); ++k) {
      const CompareCell& e = c.cells[i][k];
      std::string cert = "not certified";
      if (e.certified && e.certified_ratio) {
        cert = interval(*e.certified_ratio, e.ci_low, e.ci_high) + (e.significant ? "" : " ns");
      }
      std::string del = "not verified";
      if (e.delivered) {
        del = interval(e.delivered->ratio, e.delivered->ci_low, e.delivered->ci_high) +
              (e.delivered->slower ? " SLOWER" : "");
      }
      std::printf("  %-11s %12s %12s %11s  %-26s %-25s %13s %14s\n", c.studies[k].label.c_str(),
                  e.default_value ? format_number(*e.default_value).c_str() : "-",
                  e.best_value ? format_number(*e.best_value).c_str() : "-", ratio(e.gain).c_str(), cert.c_str(),
                  del.c_str(), k == 0 ? "" : ratio(e.best_vs_first).c_str(),
                  k == 0 ? "" : ratio(e.default_vs_first).c_str());
    }
  }
  std::printf("\n(default and search: the search's medians of the default and of the config it recommends at each "
              "size; search gain: their ratio, from the search alone; certified: the interleaved re-measurement's "
              "gain with its 95%% interval, ns = not significant; delivered: the export loaded the way a job loads "
              "it, interleaved with the defaults)\n");
  for (const auto& s : c.studies) {
    if (s.delivery_state == "measured") {
      std::printf("%s delivered: measured through %s\n", s.label.c_str(),
                  s.delivery_client.empty() ? "a plain client" : s.delivery_client.c_str());
    } else {
      std::printf("%s delivered: not verified: %s\n", s.label.c_str(),
                  s.delivery_why.empty() ? "not measured yet (acceltune verify measures it)" : s.delivery_why.c_str());
    }
  }
  // Each study against its own machine's ceiling: two generations judged by their own links.
  std::printf("\nagainst each study's own link ceiling (certified figures, inside acceltune; %s):\n",
              verdict_thresholds_text().c_str());
  for (const auto& s : c.studies) std::printf("%s %s\n", s.label.c_str(), s.efficiency_text.c_str());
  std::map<std::string, std::string> units;
  for (const auto& s : studies) {
    for (const auto& p : s.space.params()) units.emplace(p.name, p.unit);
  }
  if (c.config_differences.empty()) {
    std::printf("\nbest configs: the same at every compared size\n");
  } else {
    std::printf("\nbest configs that differ:\n");
    uint64_t last = UINT64_MAX;
    for (const auto& d : c.config_differences) {
      const auto u = units.find(d.param);
      std::printf("  %-8s %s: %s\n", d.bytes == last ? "" : format_bytes(d.bytes).c_str(), d.param.c_str(),
                  values_line(d.values, c.studies, u == units.end() ? "" : u->second).c_str());
      last = d.bytes;
    }
  }
  std::printf("\nfingerprints (%s): ", c.fingerprint_subset ? "the fields the ids hash"
                                                              : "whole fingerprint minus volatile fields");
  if (c.fingerprint_differences.empty()) {
    std::printf("no field differs\n");
  } else {
    std::printf("%zu field%s differ\n", c.fingerprint_differences.size(),
                c.fingerprint_differences.size() == 1 ? "" : "s");
    for (const auto& d : c.fingerprint_differences) {
      std::printf("  %s: %s\n", d.field.c_str(), values_line(d.values, c.studies, "").c_str());
    }
  }
  if (!c.other_fingerprint_differences.empty()) {
    std::printf("other fields (not in the ids):\n");
    for (const auto& d : c.other_fingerprint_differences) {
      std::printf("  %s: %s\n", d.field.c_str(), values_line(d.values, c.studies, "").c_str());
    }
  }
}

// One comparison of studies of one kernel; `html` written when given.
// With several spaces compared, one page each: FILE.html becomes FILE-SPACE.html.
std::string html_for(const std::string& html, const std::string& space, bool several) {
  if (!several) return html;
  const std::filesystem::path p(html);
  return (p.parent_path() / (p.stem().string() + "-" + space + p.extension().string())).string();
}

// With `json_out`, the comparison's JSON goes there instead of being printed.
int compare_group(std::vector<StudyData> studies, const std::string& html, bool as_json, Json* json_out = nullptr) {
  auto c = compare_studies(studies);
  if (!c) return fail(c.error());
  for (const auto& w : c->warnings) std::fprintf(stderr, "acceltune: warning: %s\n", w.c_str());
  if (json_out) {
    *json_out = c->to_json();
  } else if (as_json) {
    std::printf("%s\n", c->to_json().dump(2).c_str());
  } else {
    print_comparison(*c, studies);
  }
  if (!html.empty()) {
    Status st = write_page(html, compare_html(*c, studies));
    if (!st) return fail(st.error());
    if (!as_json) std::printf("\nwrote %s\n", html.c_str());
  }
  return 0;
}

// The studies the arguments name, read back: a study as it is, a bundle as its studies (or the one
// of space `only`).
Expected<std::vector<StudyData>> load_studies(const std::vector<std::string>& dirs, const std::string& only) {
  std::vector<std::string> folders;
  for (const auto& d : dirs) {
    if (!is_bundle(d)) {
      folders.push_back(d);
      continue;
    }
    ACCELTUNE_TRY_ASSIGN(const std::vector<std::string> studies, bundle_study_dirs(d, only));
    folders.insert(folders.end(), studies.begin(), studies.end());
  }
  std::vector<StudyData> out;
  for (const auto& f : folders) {
    ACCELTUNE_TRY_ASSIGN(StudyData s, load_study_dir(f));
    if (s.torn > 0) std::fprintf(stderr, "acceltune: %s: ignored a torn last trial record\n", f.c_str());
    out.push_back(std::move(s));
  }
  return out;
}

int cmd_compare(const std::vector<std::string>& dirs, const std::string& only, const std::string& html, bool as_json) {
  const bool any_bundle = std::any_of(dirs.begin(), dirs.end(), [](const std::string& d) { return is_bundle(d); });
  if (!any_bundle && !only.empty()) {
    return fail(input_error("--study {}: no argument is a bring-up bundle (no bringup.json)", only));
  }
  if (!any_bundle && dirs.size() < 2) {
    return fail(input_error("compare needs at least two study directories or a bundle with another (got {}); pass "
                            "DIR_A DIR_B ...",
                            dirs.size()));
  }
  auto studies = load_studies(dirs, only);
  if (!studies) return fail(studies.error());
  if (!any_bundle) return compare_group(std::move(studies).value(), html, as_json);
  // Bundles: the studies of each space side by side, one comparison per space that two arguments hold.
  std::vector<std::string> order;
  std::map<std::string, std::vector<StudyData>> by_space;
  for (auto& s : *studies) {
    const std::string name = s.best.space;
    if (!by_space.count(name)) order.push_back(name);
    by_space[name].push_back(std::move(s));
  }
  std::vector<std::string> alone;
  int compared = 0;
  Json all = Json::object();  // --json: each space's comparison under its name
  for (const auto& space : order) {
    if (by_space[space].size() < 2) {
      alone.push_back(space);
      continue;
    }
    if (!as_json) std::printf("%s== space %s\n\n", compared ? "\n" : "", space.c_str());
    const std::string page = html.empty() ? "" : html_for(html, space, order.size() > 1);
    Json one;
    if (const int rc = compare_group(std::move(by_space[space]), page, as_json, as_json ? &one : nullptr); rc != 0) {
      return rc;
    }
    if (as_json) all[space] = std::move(one);
    ++compared;
  }
  if (compared == 0) {
    return fail(input_error("no space is held by two of the arguments (spaces: {}); compare bundles of the same "
                            "families, or name a study of each",
                            join(order, ", ")));
  }
  if (as_json) std::printf("%s\n", all.dump(2).c_str());
  if (!alone.empty()) std::fprintf(stderr, "acceltune: compared no other: only one argument holds %s\n", join(alone, ", ").c_str());
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, CommandList& list) {
  struct Args {
    std::vector<std::string> dirs;
    std::string study, html;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmp = app.add_subcommand("compare", "compare studies of one space from different machines side by side");
  cmp->footer(
      "Per message size: each study's default and recommended value from the search and their ratio (search\n"
      "gain), the certified gain and its 95% interval when the study was certified, the delivered gain and its\n"
      "interval when the export was measured the way a job loads it (else \"not verified\"), and study k's\n"
      "search value (and default) over the first study's; then where the best configs differ, param by param,\n"
      "and which fingerprint fields differ (the probe's fingerprint_fields when every study has them, else the\n"
      "whole fingerprint minus volatile fields). Studies of different spaces, workloads, units, measurement\n"
      "settings or sizes are compared with a warning (at the sizes they share); studies of different kernels,\n"
      "or with no size in common, are refused (exit code 2).");
  cmp->add_option("DIR", a->dirs,
                  "study directories or bring-up bundles (two or more; the first is the reference); a bundle stands "
                  "for its studies, compared space by space with the others'")
      ->required();
  cmp->add_option("--study", a->study, "with bundles: only the study of this space from each");
  cmp->add_option("--html", a->html, "also write the comparison as a self-contained HTML page with one SVG plot");
  cmp->add_flag("--json", a->json, "print the comparison as JSON instead of the text table");
  list.add(cmp, [a] { return cmd_compare(a->dirs, a->study, a->html, a->json); });
}

}  // namespace acceltune::cli
