// acceltune compare: the comparison model on studies with known values, and the command's exit
// codes, warnings and refusals.
#include <gtest/gtest.h>

#include "results/compare.hpp"
#include "tests/helpers.hpp"
#include "tests/study_files.hpp"

namespace acceltune {
namespace {

using test::run_cli;
using test::StudySpec;
using test::TempDir;

using test::k1M;
using test::k4M;
using test::k64K;

Json fingerprint(int cores, double temperature) {
  return Json{{"host", "node"},
              {"cpu", {{"model", "Test CPU"}, {"logical_cores", cores}, {"flags", {"avx2"}}}},
              {"memory_bytes", 1 << 30},
              {"gpu_temperature_c", temperature},
              {"id", cores == 2 ? "aaaa" : "bbbb"}};
}

// Study A: default 10 and 20 GB/s, best (threads=2) 15 and 50. Study B: default 20 and 40, best
// (threads=4) 30 and 60.
// A study of the tiny space at 64K and 1M, with the fingerprint of fingerprint(cores, temperature).
StudySpec tiny_study(int cores, double temperature) {
  StudySpec s;
  s.space_json = test::tiny_space("tiny");
  s.sizes = {k64K, k1M};
  s.fingerprint = fingerprint(cores, temperature);
  return s;
}

StudySpec study_a() {
  StudySpec s = tiny_study(2, 40);
  s.trials = {{Json::object(), {{k64K, 10}, {k1M, 20}}, ""},
              {Json{{"threads", 2}}, {{k64K, 15}, {k1M, 50}}, ""},
              {Json{{"method", "stream"}}, {{k64K, 5}, {k1M, 8}}, ""}};
  return s;
}

StudySpec study_b() {
  StudySpec s = tiny_study(4, 71);
  s.trials = {{Json::object(), {{k64K, 20}, {k1M, 40}}, ""},
              {Json{{"threads", 4}}, {{k64K, 30}, {k1M, 60}}, ""}};
  return s;
}

std::vector<StudyData> load(const std::vector<std::filesystem::path>& dirs) {
  std::vector<StudyData> out;
  for (const auto& d : dirs) {
    auto s = load_study_dir(d.string());
    EXPECT_TRUE(s) << s.error().message;
    if (s) out.push_back(std::move(s).value());
  }
  return out;
}

TEST(Compare, GainsOfTwoRecordedStudies) {
  TempDir t;
  test::write_study(t / "a", study_a());
  test::write_study(t / "b", study_b());
  auto c = compare_studies(load({t / "a", t / "b"}));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->sizes, (std::vector<uint64_t>{k64K, k1M}));
  EXPECT_TRUE(c->warnings.empty()) << c->warnings.front();
  const auto& a64 = c->cells[0][0];
  const auto& b64 = c->cells[0][1];
  const auto& a1m = c->cells[1][0];
  const auto& b1m = c->cells[1][1];
  EXPECT_DOUBLE_EQ(*a64.default_value, 10);
  EXPECT_DOUBLE_EQ(*a64.best_value, 15);
  EXPECT_DOUBLE_EQ(*a64.gain, 1.5);
  EXPECT_DOUBLE_EQ(*a1m.gain, 2.5);
  EXPECT_DOUBLE_EQ(*b64.gain, 1.5);
  EXPECT_DOUBLE_EQ(*b1m.gain, 1.5);
  // Study 2 over study 1: best 30/15 and 60/50, default 20/10 and 40/20.
  EXPECT_DOUBLE_EQ(*b64.best_vs_first, 2.0);
  EXPECT_DOUBLE_EQ(*b1m.best_vs_first, 1.2);
  EXPECT_DOUBLE_EQ(*b64.default_vs_first, 2.0);
  EXPECT_DOUBLE_EQ(*b1m.default_vs_first, 2.0);
  EXPECT_FALSE(a64.best_vs_first.has_value());
  // p10/p90 of the default come from its trial.
  EXPECT_DOUBLE_EQ(*a64.default_p10, 9);
  EXPECT_DOUBLE_EQ(*a64.default_p90, 11);
  // The best configs differ in threads only, at both sizes.
  ASSERT_EQ(c->config_differences.size(), 2u);
  for (const auto& d : c->config_differences) {
    EXPECT_EQ(d.param, "threads");
    EXPECT_EQ(d.values, (std::vector<Json>{2, 4}));
  }
  // Fingerprints: the core count differs; the temperature and the id are volatile and left out.
  EXPECT_FALSE(c->fingerprint_subset);
  ASSERT_EQ(c->fingerprint_differences.size(), 1u);
  EXPECT_EQ(c->fingerprint_differences[0].field, "cpu.logical_cores");
  EXPECT_EQ(c->fingerprint_differences[0].values, (std::vector<Json>{2, 4}));
}

TEST(Compare, UsesFingerprintFieldsWhenEveryProbeHasThem) {
  TempDir t;
  StudySpec a = study_a(), b = study_b();
  a.fingerprint["fingerprint_fields"] = Json{{"cpu", {{"model", "Test CPU"}, {"sockets", 1}}}};
  b.fingerprint["fingerprint_fields"] = Json{{"cpu", {{"model", "Test CPU"}, {"sockets", 2}}}};
  test::write_study(t / "a", a);
  test::write_study(t / "b", b);
  auto c = compare_studies(load({t / "a", t / "b"}));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->fingerprint_subset);
  ASSERT_EQ(c->fingerprint_differences.size(), 1u);
  EXPECT_EQ(c->fingerprint_differences[0].field, "cpu.sockets");
  // Outside the hashed subset: the core count, still without the volatile temperature and id.
  ASSERT_EQ(c->other_fingerprint_differences.size(), 1u);
  EXPECT_EQ(c->other_fingerprint_differences[0].field, "cpu.logical_cores");
}

TEST(Compare, CliPrintsTheGainsAndJson) {
  TempDir t;
  test::write_study(t / "a", study_a());
  test::write_study(t / "b", study_b());
  auto r = run_cli({"compare", (t / "a").string(), (t / "b").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2.50x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.20x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("threads: #1 2 | #2 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu.logical_cores: #1 2 | #2 4"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;

  auto j = run_cli({"compare", (t / "a").string(), (t / "b").string(), "--json", "--html", (t / "c.html").string()});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json doc = Json::parse(j.out);
  EXPECT_DOUBLE_EQ(doc["sizes"][1]["studies"][1]["best_vs_first"].get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(doc["sizes"][0]["studies"][0]["gain"].get<double>(), 1.5);
  const std::string html = test::read_file(t / "c.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_NE(html.find("cpu.logical_cores"), std::string::npos);
}

TEST(Compare, WarnsOnDifferentSpaceAndSizes) {
  TempDir t;
  test::write_study(t / "a", study_a());
  StudySpec b = study_b();
  b.space_json = test::tiny_space("tiny-wide", 8);
  b.sizes = {k64K, k1M, k4M};
  for (auto& tr : b.trials) tr.values[k4M] = 70;
  test::write_study(t / "b", b);
  auto r = run_cli({"compare", (t / "a").string(), (t / "b").string(), "--html", (t / "c.html").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: different spaces: #1 is 'tiny', #2 is 'tiny-wide'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("space definitions differ"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4M (only #2)"), std::string::npos) << r.err;
  // The common sizes are still compared; 4M is not.
  EXPECT_NE(r.out.find("size 64K"), std::string::npos);
  EXPECT_NE(r.out.find("size 1M"), std::string::npos);
  EXPECT_EQ(r.out.find("size 4M"), std::string::npos);
  const std::string html = test::read_file(t / "c.html");
  EXPECT_NE(html.find("class=\"warn\">warning: different spaces"), std::string::npos);
}

TEST(Compare, RefusesNoCommonSizeAndOtherKernels) {
  TempDir t;
  test::write_study(t / "a", study_a());
  StudySpec b = study_b();
  b.sizes = {k4M};
  for (auto& tr : b.trials) tr.values = {{k4M, 70}};
  test::write_study(t / "b", b);
  auto r = run_cli({"compare", (t / "a").string(), (t / "b").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("share no message size"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((t / "a").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((t / "b").string()), std::string::npos) << r.err;

  StudySpec other = study_b();
  Json sp = Json::parse(other.space_json);
  sp["kernel"] = "replay";
  other.space_json = sp.dump();
  test::write_study(t / "k", other);
  auto k = run_cli({"compare", (t / "a").string(), (t / "k").string()});
  EXPECT_EQ(k.exit_code, 2);
  EXPECT_NE(k.err.find("compare studies of the same kernel"), std::string::npos) << k.err;

  EXPECT_EQ(run_cli({"compare", (t / "a").string()}).exit_code, 2);
  EXPECT_EQ(run_cli({"compare", (t / "a").string(), (t / "missing").string()}).exit_code, 2);
}

TEST(Compare, StudyStillRunningIsComparedWithAWarning) {
  TempDir t;
  test::write_study(t / "a", study_a());
  StudySpec b = study_b();
  b.write_best = false;
  test::write_study(t / "b", b);
  auto c = compare_studies(load({t / "a", t / "b"}));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("still running"), std::string::npos);
  EXPECT_DOUBLE_EQ(*c->cells[1][1].best_vs_first, 1.2);
}

// One loader for every command: compare and report read the whole study, best, export, exec and
// verify only what the best table needs, and both say what is wrong with the same sentence.
TEST(StudyDir, OneLoaderReadsWhatEachCommandNeeds) {
  TempDir t;
  test::write_study(t / "a", study_a());
  auto all = load_study_dir((t / "a").string());
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_TRUE(all->finished);
  EXPECT_EQ(all->trials.size(), 3u);
  EXPECT_EQ(all->best.dir, (t / "a").string());
  EXPECT_EQ(all->best.study, all->study);
  auto best = load_study_dir((t / "a").string(), StudyParts::best);
  ASSERT_TRUE(best) << best.error().message;
  EXPECT_TRUE(best->trials.empty());
  EXPECT_EQ(best->best.to_json(), all->best.to_json());
  EXPECT_EQ(best->best.dir, (t / "a").string());

  // A space this build no longer reads: the best table still exports, the whole study does not load.
  Json study = Json::parse(test::read_file(t / "a" / "study.json"));
  study["space"]["params"][0]["kind"] = "no-such-kind";
  test::write_file(t / "a" / "study.json", study.dump());
  EXPECT_TRUE(load_study_dir((t / "a").string(), StudyParts::best));
  EXPECT_FALSE(load_study_dir((t / "a").string()));

  // Without best.json the table comes from the trials, and the command says so.
  StudySpec running = study_b();
  running.write_best = false;
  test::write_study(t / "b", running);
  auto r = run_cli({"best", (t / "b").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has no best.json yet; computing it from trials.jsonl"), std::string::npos) << r.err;
  // ... and a study.json without its workload is named, by every command.
  study = Json::parse(test::read_file(t / "b" / "study.json"));
  study.erase("workload");
  test::write_file(t / "b" / "study.json", study.dump());
  for (const char* command : {"best", "export", "report"}) {
    std::vector<std::string> args = {command, (t / "b").string()};
    if (std::string(command) == "export") args.insert(args.end(), {"--format", "env"});
    if (std::string(command) == "report") args.insert(args.end(), {"--html", (t / "r.html").string()});
    r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find("study.json: lacks 'space' or 'workload'"), std::string::npos) << command << ": " << r.err;
  }
  r = run_cli({"best", (t / "none").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a study directory"), std::string::npos) << r.err;
}

TEST(Compare, FlattenedFieldsAndVolatileKeys) {
  Json fp = {{"cpu", {{"model", "X"}, {"mhz", 3000}}},
             {"nics", {{{"name", "eth0"}, {"speed_mbps", 100000}, {"temperature_c", 50}}}},
             {"id", "x"}};
  bool subset = true;
  const auto flat = flatten_fields(comparable_fingerprint(Json{{"fingerprint", fp}}, &subset));
  EXPECT_FALSE(subset);
  std::vector<std::string> names;
  for (const auto& [k, v] : flat) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu.model", "nics[0].name", "nics[0].speed_mbps"}));
}

}  // namespace
}  // namespace acceltune
