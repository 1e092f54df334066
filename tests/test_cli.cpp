// The command line as users and scripts see it: exit codes, files, messages.
#include <gtest/gtest.h>

#include "tests/helpers.hpp"
#include "tests/landscape.hpp"
#include "tuner/kernel.hpp"
#include "tuner/study.hpp"

#include <algorithm>
#include <set>

namespace acceltune {
namespace {

using test::run_cli;

TEST(Cli, HelpAndVersion) {
  auto r = run_cli({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"probe", "spaces", "search", "bench", "best", "export", "exec", "serve"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
  }
  auto s = run_cli({"search", "--help"});
  EXPECT_EQ(s.exit_code, 0);
  for (const char* flag : {"--space", "--strategy", "--budget", "--time-limit", "--sizes", "--seed", "--out", "--resume"}) {
    EXPECT_NE(s.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(run_cli({"--version"}).exit_code, 0);
}

TEST(Cli, BadUsageExitsTwo) {
  auto r = run_cli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--help"), std::string::npos);
  EXPECT_EQ(run_cli({}).exit_code, 2);
  EXPECT_EQ(run_cli({"search", "--budget", "zero"}).exit_code, 2);
  auto sz = run_cli({"search", "--sizes", "12Q"});
  EXPECT_EQ(sz.exit_code, 2);
  EXPECT_NE(sz.err.find("12Q"), std::string::npos);
}

// Input that cannot mean anything is refused before anything is written: a size of 0 bytes
// (naming the option), and --resume where no study is.
TEST(Cli, ASizeOfZeroAndAResumeOfNothingLeaveNothingBehind) {
  test::TempDir dir;
  for (const std::string sizes : {"0", "64K,0", "0:8K:+4K"}) {
    auto r = run_cli({"search", "--space", "host-copy", "--sizes", sizes, "--budget", "1", "--out", "z"}, dir.path());
    EXPECT_EQ(r.exit_code, 2) << sizes << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("--sizes: a size of 0 bytes moves nothing"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "z")) << sizes;
  }
  auto b = run_cli({"bench", "--space", "host-copy", "--sizes", "0"}, dir.path());
  EXPECT_EQ(b.exit_code, 2) << b.out << b.err;
  auto r = run_cli({"search", "--resume", "--out", "missing"}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("there is no study to resume here"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "missing")) << "a refused --resume left a folder behind";
}

// Off a terminal (a pipe, a log) a search says what it is doing at each phase, in plain lines.
TEST(Cli, ASearchInALogShowsLifeAtEachPhase) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  auto r = run_cli({"search", "--space", "land.csv", "--budget", "3", "--out", "a"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("acceltune: space land"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("acceltune: searching: trial 1/3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("elapsed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("acceltune: certifying gains against the default: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no terminal control in a log";
}

// Every option that takes a duration reads the same forms, and says them when refusing one.
TEST(Cli, DurationsTakeOneGrammar) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  auto r = run_cli({"search", "--space", "land.csv", "--budget", "2", "--certify-top", "0", "--time-limit", "1m30s",
                    "--trial-timeout", "2m", "--thermal-wait", "0", "--out", "a"},
                   dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("budget reached"), std::string::npos) << r.out;
  // Read as seconds: a millisecond is over before the first trial (and the study has none, exit 1).
  r = run_cli({"search", "--space", "land.csv", "--budget", "50", "--certify-top", "0", "--time-limit", "0.001s",
               "--out", "b"},
              dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("time limit reached"), std::string::npos) << r.out;

  r = run_cli({"search", "--space", "land.csv", "--trial-timeout", "5x"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--trial-timeout '5x' is not a duration (use 90s, 2m, 1h, 1m30s or plain seconds"),
            std::string::npos)
      << r.err;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"search", "--time-limit", "-1m"}, {"search", "--max-seconds", "2h"},
        {"search", "--thermal-wait", "2h"}, {"bench", "--space", "host-copy", "--max-seconds", "0"},
        {"serve", "--max-session-seconds", "soon"}, {"bringup", "--time-limit", "0"}}) {
    r = run_cli(bad, dir.path());
    EXPECT_EQ(r.exit_code, 2) << bad[1] << " " << bad.back();
    EXPECT_NE(r.err.find(bad[bad.size() - 2] + " '" + bad.back() + "'"), std::string::npos) << r.err;
  }
  for (const char* command : {"search", "bench", "serve", "bringup"}) {
    r = run_cli({command, "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("DURATION"), std::string::npos) << command;
    EXPECT_NE(r.out.find("1m30s or plain seconds"), std::string::npos) << command << r.out;
  }
}

TEST(Cli, PlacementFlagsAreRefusedByHostOnlyKernels) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--netns"}, std::vector<std::string>{"--peer", "127.0.0.1:1"}}) {
    std::vector<std::string> args = {"bench", "--space", "host-copy"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("runs on this host only"), std::string::npos) << r.err;
    EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  }
  auto both = run_cli({"bench", "--space", "host-copy", "--netns", "--peer", "127.0.0.1:1"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("exclude each other"), std::string::npos) << both.err;
}

// The param table of a kernel, and of a shipped space's kernel with the space's env-bound params.
TEST(Cli, SpacesPrintsAKernelsParamTable) {
  auto r = run_cli({"spaces", "--params", "host-copy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel host-copy"), std::string::npos) << r.out;
  for (const char* row : {"threads", "chunk", "method", "src_offset", "dst_offset", "touch", "hugepages"}) {
    EXPECT_NE(r.out.find(std::string("\n") + row + " "), std::string::npos) << row << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("1..1024"), std::string::npos) << r.out;
  auto t = run_cli({"spaces", "--params", "tcp-stream"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("this host's congestion controls"), std::string::npos) << t.out;
  if (KernelRegistry::instance().find("ucx")) {  // a space: its kernel applies none, its env rows follow
    auto u = run_cli({"spaces", "--params", "ucx-tcp"});
    ASSERT_EQ(u.exit_code, 0) << u.err;
    EXPECT_NE(u.out.find("applies no param itself"), std::string::npos) << u.out;
    EXPECT_NE(u.out.find("UCX_"), std::string::npos) << u.out;
  }
  auto none = run_cli({"spaces", "--params", "nosuch"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no kernel or shipped space of that name"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("host-copy"), std::string::npos) << none.err;
}

// A library's variables: documented on any build, its backend built or not.
TEST(Cli, SpacesPrintsALibrarysVariables) {
  auto r = run_cli({"spaces", "--params", "nccl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NCCL variables"), std::string::npos) << r.out;
  const auto lines = test::lines_of(r.out);
  const auto algo = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("NCCL_ALGO ", 0) == 0; });
  ASSERT_NE(algo, lines.end()) << r.out;
  for (const char* part : {"choice", "Ring", "Tree", "NVLS", "unset", "algorithms NCCL may choose from"}) {
    EXPECT_NE(algo->find(part), std::string::npos) << part << " not in: " << *algo;
  }
  for (const char* library : {"ucx", "openmpi"}) {
    auto u = run_cli({"spaces", "--params", library});
    EXPECT_EQ(u.exit_code, 0) << u.err;
  }
}

// A space that contradicts its kernel's table is refused when it is read: exit 2, one line naming
// the file and the field.
TEST(Cli, ASpaceContradictingItsTableIsRefusedNamingTheField) {
  test::TempDir dir;
  test::write_file(dir / "x.json", R"({"name": "x", "kernel": "host-copy", "sizes": ["64K"], "params": [
    {"name": "chunk", "kind": "pow2", "min": 4096, "max": 67108864, "default": 67108864}]})");
  auto r = run_cli({"bench", "--space", "x.json"}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("x.json: params.chunk.default: "), std::string::npos) << r.err;
  test::write_file(dir / "x.json", R"({"name": "x", "kernel": "host-copy", "sizes": ["64K"], "params": [
    {"name": "chunk", "kind": "pow2", "min": 4096, "max": 67108864}]})");
  r = run_cli({"search", "--space", "x.json", "--out", "s"}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("x.json: params.chunk.max: "), std::string::npos) << r.err;
}

TEST(Cli, UnknownInternalModeExitsTwo) {
  auto r = run_cli({"__no-such-mode"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown internal mode"), std::string::npos) << r.err;
}

TEST(Cli, ProbeJson) {
  auto r = run_cli({"probe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_TRUE(j["cpu"]["logical_cores"].get<int>() >= 1);
  EXPECT_TRUE(j["memory_bytes"].get<uint64_t>() > 0);
  EXPECT_FALSE(j["os"]["kernel"].get<std::string>().empty());
  EXPECT_FALSE(j["compiler"].get<std::string>().empty());
  EXPECT_EQ(j["id"].get<std::string>().size(), 12u);
  auto human = run_cli({"probe"});
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("CPU"), std::string::npos);
}

// What this machine can run comes first; what it cannot follows, grouped under the reason; every
// line fits 100 characters.
TEST(Cli, SpacesListsTheShippedDefault) {
  auto r = run_cli({"spaces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t runnable = r.out.find("Spaces this machine can run");
  const size_t host_copy = r.out.find("\nhost-copy ");
  ASSERT_NE(runnable, std::string::npos) << r.out;
  ASSERT_NE(host_copy, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("configs"), std::string::npos);
  const size_t rest = r.out.find("Not runnable here:");
  if (rest != std::string::npos) {
    EXPECT_LT(host_copy, rest) << r.out;
    EXPECT_EQ(r.out.find("unavailable", 0), std::string::npos) << r.out;  // the reason heads its group
    // A space listed below is listed once, not again among the runnable ones.
    for (const char* name : {"cuda-copy-d2h", "verbs-read"}) {
      const size_t at = r.out.find(name);
      if (at != std::string::npos) {
        EXPECT_GT(at, rest) << name << "\n" << r.out;
      }
    }
  }
  for (const auto& line : test::lines_of(r.out)) EXPECT_LE(line.size(), 100u) << line;
}

TEST(Cli, UnknownSpaceName) {
  auto r = run_cli({"search", "--space", "warp-drive"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown space 'warp-drive'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("host-copy"), std::string::npos) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
}

TEST(Cli, MalformedSpaceFileExitsTwoWithFileLineColumn) {
  test::TempDir dir;
  test::write_file(dir / "s.json", "{\"name\": \"x\",\n \"kernel\": host-copy}\n");
  auto r = run_cli({"search", "--space", (dir / "s.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("s.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 2, column"), std::string::npos) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
}

TEST(Cli, CsvWithoutObjectiveExitsTwo) {
  test::TempDir dir;
  test::write_file(dir / "l.csv", "a,b\n1,2\n");
  auto r = run_cli({"search", "--space", (dir / "l.csv").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no 'objective' column"), std::string::npos) << r.err;
}

TEST(Cli, UnwritableOutputExitsTwo) {
  test::TempDir dir;
  test::write_file(dir / "file", "x");
  auto r = run_cli({"search", "--space", "host-copy", "--budget", "2", "--sizes", "4K", "--out",
                    (dir / "file" / "out").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("choose another --out"), std::string::npos) << r.err;
}

TEST(Cli, HostCopySearchWithATinyBudget) {
  test::TempDir dir;
  auto r = run_cli({"search", "--space", "host-copy", "--budget", "4", "--sizes", "64K,1M", "--max-seconds", "0.05",
                    "--out", "study"},
                   dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // Not a terminal: plain progress lines only, no terminal control.
  for (const auto& line : test::lines_of(r.err)) EXPECT_EQ(line.rfind("acceltune: ", 0), 0u) << line;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("64K"), std::string::npos);
  EXPECT_NE(r.out.find("1M"), std::string::npos);
  EXPECT_NE(r.out.find("gain [95% interval]"), std::string::npos) << r.out;
  const auto lines = test::lines_of(test::read_file(dir / "study" / "trials.jsonl"));
  ASSERT_EQ(lines.size(), 4u);
  Json first = Json::parse(lines[0]);
  EXPECT_EQ(first["number"], 0);
  EXPECT_EQ(first["config"]["threads"], 1);  // trial 0 is the library default
  EXPECT_EQ(first["config"]["method"], "memcpy");
  for (const auto& l : lines) {
    Json t = Json::parse(l);
    EXPECT_EQ(t["state"], "ok") << l;
    EXPECT_TRUE(t["value"].is_number());
    ASSERT_EQ(t["measurements"].size(), 2u);
    EXPECT_GT(t["measurements"][0]["value"].get<double>(), 0);
  }
  Json best = Json::parse(test::read_file(dir / "study" / "best.json"));
  ASSERT_EQ(best["sizes"].size(), 2u);
  // The default is a candidate too: the best single measurement is never below it. (The
  // recommendation, by the model's posterior mean, may be a config measured a little lower.)
  EXPECT_GE(best["sizes"][0]["observed_value"].get<double>(), best["sizes"][0]["default_value"].get<double>());
  Json study = Json::parse(test::read_file(dir / "study" / "study.json"));
  EXPECT_EQ(study["space"]["name"], "host-copy");
  EXPECT_TRUE(study["fingerprint"].contains("cpu"));

  auto b = run_cli({"best", "study"}, dir.path());
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("64K"), std::string::npos);
  auto ej = run_cli({"export", "study", "--format", "json", "-o", "best-export.json"}, dir.path());
  EXPECT_EQ(ej.exit_code, 0) << ej.err;
  EXPECT_EQ(Json::parse(test::read_file(dir / "best-export.json")), best);
  auto ee = run_cli({"export", "study", "--format", "env"}, dir.path());
  EXPECT_EQ(ee.exit_code, 0) << ee.err;
  EXPECT_NE(ee.out.find("no param of this space is applied through an environment variable"), std::string::npos);
  auto bad = run_cli({"export", "study", "--format", "yaml"}, dir.path());
  EXPECT_EQ(bad.exit_code, 2);
  auto again = run_cli({"search", "--space", "host-copy", "--budget", "2", "--sizes", "64K,1M", "--out", "study"},
                       dir.path());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("--resume"), std::string::npos);
}

// An env file's paths are absolute (a bundle's acceltune.env): exec refuses one that no longer
// exists, naming the variable and how a moved bundle is loaded, rather than starting a job that
// would fall back to the library's own choice without a word.
TEST(Cli, ExecRefusesAnEnvFileNamingAMissingFile) {
  test::TempDir dir;
  test::write_file(dir / "rules.conf", "1\n");
  const std::string rules = (dir / "rules.conf").string();
  test::write_file(dir / "a.env", "OMPI_MCA_coll_tuned_dynamic_rules_filename=" + rules + "\nUCX_TLS=tcp\n");
  auto ok = test::run_cli({"exec", "--config", "a.env", "--", "sh", "-c", "echo $UCX_TLS"}, dir.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "tcp\n");
  std::filesystem::remove(dir / "rules.conf");
  auto moved = test::run_cli({"exec", "--config", "a.env", "--", "true"}, dir.path());
  EXPECT_EQ(moved.exit_code, 2) << moved.err;
  EXPECT_NE(moved.err.find("OMPI_MCA_coll_tuned_dynamic_rules_filename names " + rules + ", which does not exist"),
            std::string::npos)
      << moved.err;
  EXPECT_NE(moved.err.find("job.sh"), std::string::npos) << moved.err;
}

TEST(Cli, ReplaySearchResumeExportAndExec) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  test::write_file(dir / "space.json", R"({
      "name": "land", "kernel": "replay", "landscape": "land.csv",
      "params": [
        {"name": "algo", "kind": "categorical", "values": ["ring", "tree"], "default": "ring", "env": "TEST_ALGO"},
        {"name": "a", "kind": "int", "min": 1, "max": 5, "default": 1, "env": "TEST_A"},
        {"name": "b", "kind": "pow2", "min": 1, "max": 8, "default": 1}]})");
  auto r = run_cli({"search", "--space", "space.json", "--strategy", "grid", "--budget", "10", "--out", "s"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto r2 = run_cli({"search", "--space", "space.json", "--budget", "100", "--out", "s", "--resume"}, dir.path());
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_NE(r2.out.find("10 resumed"), std::string::npos) << r2.out;
  const auto lines = test::lines_of(test::read_file(dir / "s" / "trials.jsonl"));
  EXPECT_EQ(lines.size(), 38u);
  Json best = Json::parse(test::read_file(dir / "s" / "best.json"));
  EXPECT_EQ(best["sizes"][0]["config"], (Json{{"algo", "tree"}, {"a", 3}, {"b", 4}}));

  auto env = run_cli({"export", "s", "--format", "env", "-o", "tuned.env"}, dir.path());
  ASSERT_EQ(env.exit_code, 0) << env.err;
  const std::string env_text = test::read_file(dir / "tuned.env");
  EXPECT_NE(env_text.find("TEST_ALGO=tree\n"), std::string::npos) << env_text;
  EXPECT_NE(env_text.find("TEST_A=3\n"), std::string::npos) << env_text;

  for (const std::string config : {"s", "tuned.env", "s/best.json"}) {
    auto ex = run_cli({"exec", "--config", config, "--", "sh", "-c", "echo \"$TEST_ALGO/$TEST_A\"; exit 7"}, dir.path());
    EXPECT_EQ(ex.exit_code, 7) << config << ": " << ex.err;  // the command's own exit code
    EXPECT_EQ(ex.out, "tree/3\n") << config;
  }
  auto missing = run_cli({"exec", "--config", "s", "--", "no-such-command-here"}, dir.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no-such-command-here"), std::string::npos);

  // A resume against a changed space is refused.
  test::write_file(dir / "land.csv", test::landscape_csv() + "tree,5,1,1\n");
  auto r3 = run_cli({"search", "--space", "space.json", "--budget", "100", "--out", "s", "--resume"}, dir.path());
  EXPECT_EQ(r3.exit_code, 2);
  EXPECT_NE(r3.err.find("refusing to resume"), std::string::npos) << r3.err;
}

TEST(Cli, CsvLandscapeAsSpaceAndDefaultResultsFolder) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv(0.5));
  auto r = run_cli({"search", "--space", "land.csv", "--budget", "20", "--seed", "3"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("study: acceltune-results/land-"), std::string::npos) << r.out;
  // --resume without --out continues the newest study of that space.
  auto r2 = run_cli({"search", "--space", "land.csv", "--budget", "25", "--resume"}, dir.path());
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_NE(r2.out.find("20 resumed"), std::string::npos) << r2.out;
  auto sizes = run_cli({"search", "--space", "land.csv", "--sizes", "4K"}, dir.path());
  EXPECT_EQ(sizes.exit_code, 2);
}

TEST(Cli, EveryStrategyRunsAStudy) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv(1.0));
  for (const std::string strategy : {"grid", "random", "local", "bayes", "halving", "halving-bayes"}) {
    auto r = run_cli({"search", "--space", "land.csv", "--strategy", strategy, "--budget", "16", "--out", strategy},
                     dir.path());
    ASSERT_EQ(r.exit_code, 0) << strategy << ": " << r.err;
    const auto lines = test::lines_of(test::read_file(dir / strategy / "trials.jsonl"));
    EXPECT_EQ(lines.size(), 16u) << strategy;
    std::set<std::string> seen;
    for (const auto& l : lines) {
      Json t = Json::parse(l);
      EXPECT_TRUE(seen.insert(t["key"].get<std::string>() + "@" + t.value("effort", Json(1.0)).dump()).second)
          << strategy << " repeated " << l;
    }
  }
}

TEST(Cli, BenchMeasuresOneConfig) {
  auto r = run_cli({"bench", "--space", "host-copy", "--set", "threads=1", "--set", "chunk=64K", "--sizes", "256K",
                    "--max-seconds", "0.05"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chunk=65536"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("256K"), std::string::npos);
  auto bad = run_cli({"bench", "--space", "host-copy", "--set", "chunk=3000"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("chunk"), std::string::npos);
  // A config that crashes the kernel is measured in a worker and reported, not fatal.
  test::TempDir dir;
  test::write_file(dir / "f.json", R"({"name": "f", "kernel": "fault", "sizes": [1], "params": [
      {"name": "mode", "kind": "categorical", "values": ["ok", "crash"], "default": "ok"}]})");
  auto crash = run_cli({"bench", "--space", (dir / "f.json").string(), "--set", "mode=crash"});
  EXPECT_EQ(crash.exit_code, 1);
  EXPECT_NE(crash.out.find("SIGSEGV"), std::string::npos) << crash.out;
  auto invalid = run_cli({"bench", "--space", "host-copy", "--set", "touch=workers", "--set", "threads=1"});
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_NE(invalid.err.find("not valid"), std::string::npos) << invalid.err;
}

}  // namespace
}  // namespace acceltune

namespace acceltune {
namespace {

// A search that fails says why in its study folder (outcome.json), where bring-up reads it; one
// that finishes says so too.
TEST(Cli, ASearchLeavesItsOutcomeInItsFolder) {
  test::TempDir dir;
  const auto space = dir / "fails.json";
  test::write_file(space, R"({"name": "fails", "kernel": "fault", "sizes": [1], "params": [
    {"name": "mode", "kind": "categorical", "values": ["exit"]}]})");
  auto r = test::run_cli({"search", "--space", space.string(), "--budget", "2", "--out", (dir / "s").string(),
                          "--certify-top", "0", "--verify-rounds", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto failed = read_search_outcome((dir / "s").string());
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->state, "failed");
  EXPECT_EQ(failed->exit_code, 1);
  EXPECT_NE(failed->why.find("no trial measured ok"), std::string::npos) << failed->why;
  auto ok = test::run_cli({"search", "--space", "host-copy", "--budget", "1", "--sizes", "64K", "--out",
                           (dir / "t").string(), "--certify-top", "0", "--verify-rounds", "0"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto done = read_search_outcome((dir / "t").string());
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->state, "done");
  EXPECT_EQ(done->why, "");
}

// A family's name given as a space lists its spaces; --ranks on a space without ranks is refused.
TEST(Cli, AFamilyNameListsItsSpacesAndRanksNeedsASpaceWithRanks) {
  auto f = run_cli({"search", "--space", "ucx"});
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.err.find("'ucx' is a family, not a space: its spaces are ucx-shm, ucx-tcp"), std::string::npos) << f.err;
  auto r = run_cli({"bench", "--space", "host-copy", "--ranks", "2", "--sizes", "64K"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ranks: space host-copy runs no ranks"), std::string::npos) << r.err;
  auto zero = run_cli({"search", "--space", "mpi-allreduce", "--ranks", "0"});
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
}

}  // namespace
}  // namespace acceltune
