// acceltune-search-bench: runs strategies on landscape CSVs for many seeds and reports, per
// strategy and landscape, the evaluations needed to reach 95% and 98% of the landscape's
// optimum (median and quartiles over seeds; a screening trial at effort e counts e) and the
// fraction of the optimum reached after 25, 50 and 100 evaluations. The incumbent is the config
// with the best observed (noisy) value; it is scored by its true value. Every run starts with
// the default config, as a study does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <filesystem>

#include "kernels/csv.hpp"
#include "tuner/kernel.hpp"
#include "tuner/strategy.hpp"
#include "tuner/trial.hpp"
#include "tuner/measurement.hpp"

namespace acceltune {
namespace {

struct Run {
  // After each trial: its cumulative cost in full measurements (a screening trial at effort
  // 1/9 costs 1/9) and the true value of the incumbent as a fraction of the optimum.
  std::vector<std::pair<double, double>> curve;
  double seconds = 0;
};

Expected<Run> run_once(const Space& space, Kernel& kernel, const std::unordered_map<std::string, double>& truth,
                       double optimum, const std::string& strategy, uint64_t seed, int max_evals) {
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Strategy> st, make_strategy(strategy, space, seed));
  Run run;
  // The incumbent: the best observed value among full measurements (screening values are
  // noisier by design and only rank configs).
  double best_seen = -INFINITY, best_true = 0, cost = 0;
  const auto start = std::chrono::steady_clock::now();
  std::optional<Config> next = space.default_config();
  for (int n = 0; cost < max_evals; ++n) {
    double effort = 1.0;
    if (n > 0) {
      next = st->ask();
      effort = std::clamp(st->effort(), 1e-3, 1.0);
    }
    if (!next) break;
    MeasureSettings ms;
    ms.effort = effort;
    Trial t;
    t.number = n;
    t.config = *next;
    t.key = space.key(*next);
    t.effort = effort;
    t.measurements = {kernel.measure(space, *next, 0, ms, MeasureContext{seed, n})};
    summarise(t);
    st->tell(t);
    cost += effort;
    if (effort >= 1.0 && t.value && *t.value > best_seen) {
      best_seen = *t.value;
      best_true = truth.at(t.key);
    }
    run.curve.emplace_back(cost, best_true / optimum);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

double pct(std::vector<double> xs, double q) { return xs.empty() ? NAN : quantile(std::move(xs), q); }

}  // namespace
}  // namespace acceltune

namespace acceltune {
namespace {

// The landscape without its noise column: its replay values are the true objective.
Expected<std::unordered_map<std::string, double>> true_values(const std::string& path) {
  auto table = read_csv_file(path);
  if (!table) return table.error();
  const auto& h = table->header;
  const auto std_col = std::find(h.begin(), h.end(), "objective_std");
  std::unordered_map<std::string, double> truth;
  std::string text;
  auto line = [](const std::vector<std::string>& cells, size_t skip) {
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
  const size_t skip = std_col == h.end() ? SIZE_MAX : static_cast<size_t>(std_col - h.begin());
  text += line(h, skip);
  for (const auto& r : table->rows) text += line(r, skip);
  const auto tmp = std::filesystem::temp_directory_path() /
                   fmt::format("acceltune-bench-{}-{}.csv", getpid(), std::filesystem::path(path).stem().string());
  {
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) return runtime_error("{}: cannot write", tmp.string());
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  auto clean = SpaceLoaderRegistry::instance().find(".csv")->load(tmp);
  auto k = clean ? make_kernel(*clean) : Expected<std::unique_ptr<Kernel>>(clean.error());
  std::filesystem::remove(tmp);
  if (!clean) return clean.error();
  if (!k) return k.error();
  // Keys are name=value pairs, the same as in the noisy space.
  clean->for_each_valid([&](const Config& c) {
    truth[clean->key(c)] = (*k)->measure(*clean, c, 0, {}, {}).value;
    return true;
  });
  return truth;
}

}  // namespace
}  // namespace acceltune

int main(int argc, char** argv) {
  using namespace acceltune;
  CLI::App app{"Compares search strategies on recorded or synthetic landscapes (CSV, as the replay kernel reads)."};
  std::vector<std::string> landscapes;
  std::string strategies = "bayes,local,random";
  int seeds = 20, max_evals = 200;
  std::string json_out;
  app.add_option("landscapes", landscapes, "landscape CSV files")->required();
  app.add_option("--strategies", strategies, "comma-separated strategies (default bayes,local,random)");
  app.add_option("--seeds", seeds, "seeds per strategy and landscape (default 20)")->check(CLI::PositiveNumber);
  app.add_option("--max-evals", max_evals, "evaluations per run (default 200)")->check(CLI::PositiveNumber);
  app.add_option("--json", json_out, "also write every run's incumbent curve to this JSON file");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> names;
  for (size_t s = 0, e; s <= strategies.size(); s = e + 1) {
    e = strategies.find(',', s);
    if (e == std::string::npos) e = strategies.size();
    if (e > s) names.push_back(strategies.substr(s, e - s));
  }
  Json all = Json::object();
  std::printf("%-16s %-8s %5s %7s %18s %18s %6s %6s %6s %8s\n", "landscape", "strategy", "seeds", "configs",
              "evals to 95% (IQR)", "evals to 98% (IQR)", "@25", "@50", "@100", "s/run");
  for (const auto& path : landscapes) {
    auto space = SpaceLoaderRegistry::instance().find(".csv")->load(path);
    if (!space) {
      std::fprintf(stderr, "acceltune-search-bench: %s\n", space.error().message.c_str());
      return 2;
    }
    auto truth = true_values(path);
    if (!truth) {
      std::fprintf(stderr, "acceltune-search-bench: %s\n", truth.error().message.c_str());
      return 2;
    }
    double optimum = -INFINITY;
    for (const auto& [k, v] : *truth) optimum = std::max(optimum, v);
    const std::string base = std::filesystem::path(path).stem().string();
    for (const auto& name : names) {
      std::vector<double> to95, to98, at25, at50, at100, secs;
      Json runs = Json::array();
      for (int s = 1; s <= seeds; ++s) {
        // A fresh kernel per run, so each run's noise depends on its seed alone.
        Space sp = *space;
        auto k = make_kernel(sp);
        if (!k) {
          std::fprintf(stderr, "acceltune-search-bench: %s\n", k.error().message.c_str());
          return 2;
        }
        auto run = run_once(sp, **k, *truth, optimum, name, static_cast<uint64_t>(s), max_evals);
        if (!run) {
          std::fprintf(stderr, "acceltune-search-bench: %s\n", run.error().message.c_str());
          return 2;
        }
        const auto& f = run->curve;
        auto first_at = [&](double goal) {
          for (const auto& [c, x] : f) {
            if (x >= goal) return std::ceil(c - 1e-9);
          }
          return static_cast<double>(max_evals + 1);  // not reached: censored
        };
        auto at = [&](double n) {
          double x = 0;
          for (const auto& [c, v] : f) {
            if (c <= n + 1e-9) x = v;
          }
          return x;
        };
        to95.push_back(first_at(0.95));
        to98.push_back(first_at(0.98));
        at25.push_back(at(25));
        at50.push_back(at(50));
        at100.push_back(at(100));
        secs.push_back(run->seconds);
        Json curve = Json::array();
        for (const auto& [c, x] : f) curve.push_back(Json::array({c, x}));
        runs.push_back(Json{{"seed", s}, {"cost_fraction", curve}});
      }
      auto evals = [&](const std::vector<double>& xs) {
        auto show = [&](double x) { return x > max_evals ? fmt::format(">{}", max_evals) : fmt::format("{:.0f}", x); };
        return fmt::format("{} ({}-{})", show(pct(xs, 0.5)), show(pct(xs, 0.25)), show(pct(xs, 0.75)));
      };
      std::printf("%-16s %-8s %5d %7zu %18s %18s %6.3f %6.3f %6.3f %8.2f\n", base.c_str(), name.c_str(), seeds,
                  truth->size(), evals(to95).c_str(), evals(to98).c_str(), pct(at25, 0.5), pct(at50, 0.5),
                  pct(at100, 0.5), pct(secs, 0.5));
      std::fflush(stdout);
      all[base][name] = Json{{"to95", to95}, {"to98", to98}, {"at25", at25}, {"at50", at50}, {"at100", at100},
                             {"seconds", secs}, {"runs", runs}};
    }
  }
  if (!json_out.empty()) {
    std::FILE* f = std::fopen(json_out.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "acceltune-search-bench: cannot write %s\n", json_out.c_str());
      return 1;
    }
    const std::string text = all.dump() + "\n";
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  return 0;
}
