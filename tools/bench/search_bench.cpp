// acceltune-search-bench: runs strategies on landscapes and reports, per strategy, the
// evaluations needed until the incumbent is truly within 95% and 98% of the optimum: the median,
// the 75th percentile and the worst case over runs, and the median fraction of the optimum after
// 25, 50 and 100 evaluations. Landscapes are CSV files (as the replay kernel reads) or instances
// of the seeded family (tools/bench/landscape_family.hpp) generated in memory.
//
// Counting: every trial is one evaluation (a screening trial at effort e counts e), every run
// starts with the default config, as a study does. A trial measures every size of the landscape.
// Two incumbents are scored, each by its true value: "observed", per size the config with the
// best observed noisy value among full measurements; "recommended", per size the study's
// noise-aware choice (tuner/recommend.hpp: the best posterior mean among the measured configs).
// With several sizes, the fraction of the optimum is the least over sizes of each size's fraction:
// a run is at 98% when every size's incumbent is. Family instances are grouped by their class
// (smooth, rugged, multi-size, noisy), with a row over all of them.
//
// Calibration: at the end of each run, the recommended config's model estimate and its 95%
// interval per size against the config's true value (what re-measuring it without end would give).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "kernels/shared/csv.hpp"
#include "tools/bench/landscape_family.hpp"
#include "tuner/kernel.hpp"
#include "tuner/measurement.hpp"
#include "tuner/recommend.hpp"
#include "tuner/strategy.hpp"
#include "tuner/trial.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

using Truth = std::unordered_map<std::string, double>;  // "key@bytes" -> true value

std::string truth_key(const std::string& key, uint64_t bytes) { return key + "@" + std::to_string(bytes); }

struct Landscape {
  std::string name, group;
  fs::path path;
  Space space;
  Truth truth;
  std::vector<uint64_t> sizes;        // {0} when unsized
  std::map<uint64_t, double> optimum;  // per size
};

// The landscape without its noise column: its replay values are the true objective.
Expected<Truth> true_values(const fs::path& path, const std::vector<uint64_t>& sizes) {
  ACCELTUNE_TRY_ASSIGN(CsvTable table, read_csv_file(path));
  const auto& h = table.header;
  const auto std_col = std::find(h.begin(), h.end(), "objective_std");
  const size_t skip = std_col == h.end() ? SIZE_MAX : static_cast<size_t>(std_col - h.begin());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i == skip) continue;
      std::string c = cells[i];
      if (c.find_first_of(",\"") != std::string::npos) {
        std::string q = "\"";
        for (char ch : c) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        c = q + "\"";
      }
      out += (out.empty() ? "" : ",") + c;
    }
    return out + "\n";
  };
  std::string text = line(h);
  for (const auto& r : table.rows) text += line(r);
  const fs::path tmp = fs::temp_directory_path() / fmt::format("acceltune-bench-{}-{}.csv", getpid(), path.stem().string());
  std::ofstream(tmp) << text;
  auto clean = SpaceLoaderRegistry::instance().find(".csv")->load(tmp);
  auto k = clean ? make_kernel(*clean) : Expected<std::unique_ptr<Kernel>>(clean.error());
  fs::remove(tmp);
  if (!clean) return clean.error();
  if (!k) return k.error();
  Truth truth;
  clean->for_each_valid([&](const Config& c) {
    for (uint64_t b : sizes) truth[truth_key(clean->key(c), b)] = (*k)->measure(*clean, c, b, {}, {}).value;
    return true;
  });
  return truth;
}

Expected<Landscape> load_landscape(const fs::path& path, const std::string& group) {
  Landscape l;
  l.path = path;
  l.name = path.stem().string();
  l.group = group.empty() ? l.name : group;
  ACCELTUNE_TRY_ASSIGN(l.space, SpaceLoaderRegistry::instance().find(".csv")->load(path));
  {
    // Attaching the kernel gives the space its membership (configs absent from the file are invalid).
    ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Kernel> k, make_kernel(l.space));
  }
  l.sizes = l.space.sizes().empty() ? std::vector<uint64_t>{0} : l.space.sizes();
  ACCELTUNE_TRY_ASSIGN(l.truth, true_values(path, l.sizes));
  for (uint64_t b : l.sizes) l.optimum[b] = -INFINITY;
  l.space.for_each_valid([&](const Config& c) {
    for (uint64_t b : l.sizes) l.optimum[b] = std::max(l.optimum[b], l.truth.at(truth_key(l.space.key(c), b)));
    return true;
  });
  return l;
}

struct Estimate {
  double predicted = 0, low = 0, high = 0, truth = 0;
};

struct Run {
  // After each trial: cumulative cost and the true fraction of the optimum of the incumbents.
  std::vector<std::pair<double, double>> observed;
  std::vector<std::pair<double, double>> recommended;  // at checkpoints only
  std::vector<Estimate> estimates;                      // at the end, per size, when the model gave one
  double seconds = 0;
  int invalid_proposals = 0, repeated_proposals = 0;
};

// Recommended incumbents are scored at every evaluation up to 50, then every 5th (each costs a
// model fit).
bool checkpoint(int n) { return n <= 50 || n % 5 == 0; }

Expected<Run> run_once(const Landscape& l, const std::string& strategy, uint64_t seed, int max_evals,
                       int recommend_until) {
  Space space = l.space;
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Kernel> kernel, make_kernel(space));
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Strategy> st, make_strategy(strategy, space, seed));
  Run run;
  const size_t S = l.sizes.size();
  std::vector<double> best_seen(S, -INFINITY), best_true(S, 0);
  auto fraction = [&](const std::vector<double>& v) {
    double f = INFINITY;
    for (size_t s = 0; s < S; ++s) f = std::min(f, v[s] / l.optimum.at(l.sizes[s]));
    return f;
  };
  std::vector<Trial> trials;
  std::unordered_map<std::string, int> seen;
  double cost = 0;
  const auto start = std::chrono::steady_clock::now();
  std::optional<Config> next = space.default_config();
  for (int n = 0; cost < max_evals; ++n) {
    double effort = 1.0;
    if (n > 0) {
      next = st->ask();
      effort = std::clamp(st->effort(), 1e-3, 1.0);
    }
    if (!next) break;
    Trial t;
    t.number = n;
    t.config = *next;
    t.key = space.key(*next);
    t.effort = effort;
    if (!space.is_valid(*next)) ++run.invalid_proposals;
    if (effort >= 1.0 && seen[t.key]++ > 0) ++run.repeated_proposals;
    MeasureSettings ms;
    ms.effort = effort;
    for (uint64_t b : l.sizes) t.measurements.push_back(kernel->measure(space, *next, b, ms, MeasureContext{seed, n}));
    summarise(t);
    st->tell(t);
    cost += effort;
    if (effort >= 1.0) {
      for (size_t s = 0; s < S; ++s) {
        const Measurement& m = t.measurements[s];
        if (m.state == State::ok && m.value > best_seen[s]) {
          best_seen[s] = m.value;
          best_true[s] = l.truth.at(truth_key(t.key, l.sizes[s]));
        }
      }
    }
    run.observed.emplace_back(cost, fraction(best_true));
    trials.push_back(std::move(t));
    const int evals = static_cast<int>(std::ceil(cost - 1e-9));
    if (recommend_until > 0 && evals <= recommend_until && checkpoint(evals)) {
      const Ranking r = rank_measured(space, trials, l.sizes, seed);
      std::vector<double> rec(S, 0);
      for (size_t s = 0; s < S; ++s) {
        const auto it = r.find(l.sizes[s]);
        if (it == r.end() || it->second.empty()) continue;
        const Trial& top = trials[static_cast<size_t>(it->second.front().trial)];
        rec[s] = l.truth.at(truth_key(top.key, l.sizes[s]));
      }
      run.recommended.emplace_back(cost, fraction(rec));
    }
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (recommend_until > 0) {
    std::string method;
    const Ranking r = rank_measured(space, trials, l.sizes, seed, &method);
    for (uint64_t b : l.sizes) {
      const auto it = r.find(b);
      if (method != "posterior-mean" || it == r.end() || it->second.empty() || !it->second.front().low) continue;
      const RankedTrial& top = it->second.front();
      run.estimates.push_back({top.predicted, *top.low, *top.high,
                               l.truth.at(truth_key(trials[static_cast<size_t>(top.trial)].key, b))});
    }
  }
  return run;
}

double first_at(const std::vector<std::pair<double, double>>& curve, double goal, int censor) {
  for (const auto& [c, x] : curve) {
    if (x >= goal) return std::ceil(c - 1e-9);
  }
  return static_cast<double>(censor + 1);  // not reached: censored
}

double at(const std::vector<std::pair<double, double>>& curve, double n) {
  double x = 0;
  for (const auto& [c, v] : curve) {
    if (c <= n + 1e-9) x = v;
  }
  return x;
}

double pct(std::vector<double> xs, double q) { return xs.empty() ? NAN : quantile(std::move(xs), q); }

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  for (size_t s = 0, e; s <= text.size(); s = e + 1) {
    e = text.find(',', s);
    if (e == std::string::npos) e = text.size();
    if (e > s) out.push_back(text.substr(s, e - s));
  }
  return out;
}

// "101:140" or "1,2,5"
Expected<std::vector<uint64_t>> parse_seeds(const std::string& text) {
  std::vector<uint64_t> out;
  for (const auto& part : split(text)) {
    const auto colon = part.find(':');
    try {
      if (colon == std::string::npos) {
        out.push_back(std::stoull(part));
      } else {
        const uint64_t a = std::stoull(part.substr(0, colon)), b = std::stoull(part.substr(colon + 1));
        if (b < a) return input_error("--family {}: the range ends before it starts", part);
        for (uint64_t s = a; s <= b; ++s) out.push_back(s);
      }
    } catch (const std::exception&) {
      return input_error("--family '{}': give seeds as 101:140 or 1,2,3", part);
    }
  }
  return out;
}

}  // namespace
}  // namespace acceltune

int main(int argc, char** argv) {
  using namespace acceltune;
  CLI::App app{
      "Compares search strategies on landscapes: recorded or synthetic CSV files (as the replay kernel reads) "
      "and instances of the seeded landscape family. Prints, per landscape group and strategy, the median, 75th "
      "percentile and worst evaluations to 95% and 98% of the optimum, for the observed and the recommended "
      "incumbent."};
  std::vector<std::string> files;
  std::string strategies = "bayes,local,random", family, write_family, json_out;
  int seeds = 0, max_evals = 100, recommend_until = 100;
  app.add_option("landscapes", files, "landscape CSV files (each its own group)");
  app.add_option("--family", family,
                 "instances of the landscape family, by seed: 101:140 or 1,2,3 (a group per class, and one row over all)");
  app.add_option("--write-family", write_family, "write the --family instances as CSV files into this directory and exit");
  app.add_option("--strategies", strategies, "comma-separated strategies (default bayes,local,random)");
  app.add_option("--seeds", seeds,
                 "runs per landscape, seeds 1..N (default: 20 per CSV file, 1 per family instance, whose seed it is)");
  app.add_option("--max-evals", max_evals, "evaluations per run (default 100)")->check(CLI::PositiveNumber);
  app.add_option("--recommend-until", recommend_until,
                 "score the recommended incumbent up to this many evaluations (default 100; 0: not at all)");
  app.add_option("--json", json_out, "also write every run's curves to this JSON file");
  CLI11_PARSE(app, argc, argv);

  struct Source {
    fs::path path;
    std::string group;
    std::vector<uint64_t> run_seeds;
  };
  std::vector<Source> sources;
  const fs::path tmp_dir = fs::temp_directory_path() / fmt::format("acceltune-family-{}", getpid());
  // Generated instances live in a temporary directory while the runs read them.
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{write_family.empty() && !family.empty() ? tmp_dir : fs::path()};
  if (!family.empty()) {
    auto list = parse_seeds(family);
    if (!list) {
      std::fprintf(stderr, "acceltune-search-bench: %s\n", list.error().message.c_str());
      return 2;
    }
    const fs::path dir = write_family.empty() ? tmp_dir : fs::path(write_family);
    fs::create_directories(dir);
    for (uint64_t s : *list) {
      const bench::FamilyInstance inst = bench::make_family_instance(s);
      const fs::path p = dir / fmt::format("family-{}-{}.csv", s, bench::class_name(inst.cls));
      std::ofstream(p) << inst.csv();
      std::fprintf(stderr, "%s\n", inst.summary().c_str());
      std::vector<uint64_t> rs;
      for (int k = 0; k < std::max(seeds, 1); ++k) rs.push_back(s + 1000003ull * static_cast<uint64_t>(k));
      sources.push_back({p, bench::class_name(inst.cls), rs});
    }
    if (!write_family.empty()) return 0;
  }
  for (const auto& f : files) {
    std::vector<uint64_t> rs;
    for (int k = 1; k <= (seeds > 0 ? seeds : 20); ++k) rs.push_back(static_cast<uint64_t>(k));
    sources.push_back({f, "", rs});
  }
  if (sources.empty()) {
    std::fprintf(stderr, "acceltune-search-bench: give landscape files or --family SEEDS\n");
    return 2;
  }
  std::vector<Landscape> lands;
  std::vector<std::vector<uint64_t>> run_seeds;
  for (const auto& src : sources) {
    auto l = load_landscape(src.path, src.group);
    if (!l) {
      std::fprintf(stderr, "acceltune-search-bench: %s\n", l.error().message.c_str());
      return 2;
    }
    lands.push_back(std::move(*l));
    run_seeds.push_back(src.run_seeds);
  }

  std::vector<std::string> groups;
  for (const auto& l : lands) {
    if (std::find(groups.begin(), groups.end(), l.group) == groups.end()) groups.push_back(l.group);
  }
  if (!family.empty()) {
    // The family's classes in their order, then any files.
    auto rank = [](const std::string& g) {
      for (int c = 0; c < 4; ++c) {
        if (g == bench::class_name(static_cast<bench::FamilyClass>(c))) return c;
      }
      return 4;
    };
    std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  }
  const bool overall = !family.empty() && groups.size() > 1;
  struct Stats {
    std::vector<double> o95, o98, r95, r98, a25, a50, a100, secs;
    std::vector<Estimate> est;
    int invalid = 0, repeated = 0;
    void add(const Stats& o) {
      for (auto [to, from] : {std::pair{&o95, &o.o95}, {&o98, &o.o98}, {&r95, &o.r95}, {&r98, &o.r98}, {&a25, &o.a25},
                              {&a50, &o.a50}, {&a100, &o.a100}, {&secs, &o.secs}}) {
        to->insert(to->end(), from->begin(), from->end());
      }
      est.insert(est.end(), o.est.begin(), o.est.end());
      invalid += o.invalid;
      repeated += o.repeated;
    }
  };
  const int rc = std::min(max_evals, recommend_until);
  auto evals = [&](const std::vector<double>& xs, int censor) {
    if (xs.empty()) return std::string("-");
    auto show = [&](double x) { return x > censor ? fmt::format(">{}", censor) : fmt::format("{:.0f}", x); };
    return fmt::format("{}/{}/{}", show(pct(xs, 0.5)), show(pct(xs, 0.75)), show(pct(xs, 1.0)));
  };
  auto print_row = [&](const std::string& group, const std::string& name, const Stats& st) {
    std::printf("%-14s %-14s %4zu  %-17s %-17s %-17s %-17s %5.3f %5.3f %5.3f %6.2f\n", group.c_str(), name.c_str(),
                st.o95.size(), evals(st.o95, max_evals).c_str(), evals(st.o98, max_evals).c_str(), evals(st.r95, rc).c_str(),
                evals(st.r98, rc).c_str(), pct(st.a25, 0.5), pct(st.a50, 0.5), pct(st.a100, 0.5), pct(st.secs, 0.5));
    if (st.invalid || st.repeated) {
      std::printf("  note: %s proposed %d invalid and %d repeated configs\n", name.c_str(), st.invalid, st.repeated);
    }
    std::fflush(stdout);
  };
  std::map<std::string, std::map<std::string, Stats>> results;  // strategy -> group -> stats
  Json all = Json::object();
  std::printf("%-14s %-14s %4s  %-17s %-17s %-17s %-17s %5s %5s %5s %6s\n", "landscapes", "strategy", "runs",
              "obs to 95% med/p75/max", "obs to 98%", "rec to 95%", "rec to 98%", "@25", "@50", "@100", "s/run");
  for (const auto& name : split(strategies)) {
    Stats total;
    for (const auto& group : groups) {
      Stats& st = results[name][group];
      Json runs = Json::array();
      for (size_t i = 0; i < lands.size(); ++i) {
        if (lands[i].group != group) continue;
        for (uint64_t seed : run_seeds[i]) {
          auto run = run_once(lands[i], name, seed, max_evals, recommend_until);
          if (!run) {
            std::fprintf(stderr, "acceltune-search-bench: %s\n", run.error().message.c_str());
            return 2;
          }
          st.o95.push_back(first_at(run->observed, 0.95, max_evals));
          st.o98.push_back(first_at(run->observed, 0.98, max_evals));
          if (rc > 0) {
            st.r95.push_back(first_at(run->recommended, 0.95, rc));
            st.r98.push_back(first_at(run->recommended, 0.98, rc));
          }
          st.a25.push_back(at(run->observed, 25));
          st.a50.push_back(at(run->observed, 50));
          st.a100.push_back(at(run->observed, 100));
          st.secs.push_back(run->seconds);
          st.est.insert(st.est.end(), run->estimates.begin(), run->estimates.end());
          st.invalid += run->invalid_proposals;
          st.repeated += run->repeated_proposals;
          auto curve = [](const std::vector<std::pair<double, double>>& c) {
            Json out = Json::array();
            for (const auto& [x, y] : c) out.push_back(Json::array({x, y}));
            return out;
          };
          Json est = Json::array();
          for (const auto& e : run->estimates) est.push_back(Json{{"predicted", e.predicted}, {"low", e.low}, {"high", e.high}, {"truth", e.truth}});
          runs.push_back(Json{{"landscape", lands[i].name}, {"seed", seed}, {"observed", curve(run->observed)},
                              {"recommended", curve(run->recommended)}, {"estimates", est}});
        }
      }
      print_row(group, name, st);
      total.add(st);
      all[group][name] = Json{{"obs95", st.o95}, {"obs98", st.o98}, {"rec95", st.r95}, {"rec98", st.r98}, {"at25", st.a25},
                              {"at50", st.a50}, {"at100", st.a100}, {"seconds", st.secs}, {"runs", runs}};
    }
    if (overall) print_row("all", name, total);
    results[name]["all"] = total;
  }
  // Calibration of the recommended config's model estimate, against its true value.
  bool any_estimate = false;
  for (const auto& [name, by_group] : results) any_estimate = any_estimate || !by_group.at("all").est.empty();
  if (any_estimate) {
    std::printf("\nmodel estimate of the recommended config at the end of each run, against its true value\n");
    std::printf("%-14s %-14s %5s  %-26s %-14s %s\n", "landscapes", "strategy", "sizes", "estimate/true p10/med/p90",
                "95% covers", "interval width/true (median)");
    for (const auto& name : split(strategies)) {
      std::vector<std::string> rows = groups;
      if (overall) rows.push_back("all");
      for (const auto& group : rows) {
        const Stats& st = results[name][group];
        if (st.est.empty()) continue;
        std::vector<double> ratio, width;
        int covered = 0;
        for (const auto& e : st.est) {
          ratio.push_back(e.predicted / e.truth);
          width.push_back((e.high - e.low) / e.truth);
          covered += e.low <= e.truth && e.truth <= e.high ? 1 : 0;
        }
        std::printf("%-14s %-14s %5zu  %-26s %-14s %.3f\n", group.c_str(), name.c_str(), st.est.size(),
                    fmt::format("{:.3f}/{:.3f}/{:.3f}", pct(ratio, 0.1), pct(ratio, 0.5), pct(ratio, 0.9)).c_str(),
                    fmt::format("{:.0f}%", 100.0 * covered / static_cast<double>(st.est.size())).c_str(), pct(width, 0.5));
      }
    }
  }
  if (!json_out.empty()) {
    std::ofstream out(json_out);
    if (!out) {
      std::fprintf(stderr, "acceltune-search-bench: cannot write %s\n", json_out.c_str());
      return 1;
    }
    out << all.dump() << "\n";
  }
  return 0;
}
