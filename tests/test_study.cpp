#include <gtest/gtest.h>

#include <set>

#include "tests/helpers.hpp"
#include "tests/landscape.hpp"
#include "tuner/best.hpp"
#include "tuner/study.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

// A replay space over the test landscape, with `algo` bound to an environment variable.
struct Fixture {
  test::TempDir dir;
  Space space;
  std::unique_ptr<Kernel> kernel;
  Workload workload;

  explicit Fixture(double noise = 0.0) : space(make_space(dir, noise)) {
    auto k = make_kernel(space);
    EXPECT_TRUE(k.has_value()) << k.error().message;
    kernel = std::move(k).value();
    workload.kernel = "replay";
    workload.operation = "replay";
    workload.sizes = {0};
  }

  static Space make_space(const test::TempDir& dir, double noise) {
    test::write_file(dir / "land.csv", test::landscape_csv(noise));
    test::write_file(dir / "space.json", R"({
      "name": "land", "kernel": "replay", "landscape": "land.csv",
      "params": [
        {"name": "algo", "kind": "categorical", "values": ["ring", "tree"], "default": "ring", "env": "TEST_ALGO"},
        {"name": "a", "kind": "int", "min": 1, "max": 5, "default": 1},
        {"name": "b", "kind": "pow2", "min": 1, "max": 8, "default": 1}]})");
    auto s = Space::load_file(dir / "space.json");
    EXPECT_TRUE(s.has_value()) << s.error().message;
    return std::move(s).value();
  }

  std::unique_ptr<ResultStore> store(const std::string& name = "study") {
    auto st = open_store("dir", (dir / name).string());
    EXPECT_TRUE(st.has_value());
    return std::move(st).value();
  }

  Expected<StudyOutcome> run(ResultStore& st, StudyOptions o) { return run_study(space, *kernel, st, workload, o, Json{{"id", "test"}}); }
};

StudyOptions options(const std::string& strategy, int64_t budget, uint64_t seed = 1, bool resume = false) {
  StudyOptions o;
  o.strategy = strategy;
  o.budget = budget;
  o.seed = seed;
  o.resume = resume;
  o.worker_command = test::worker_command();
  return o;
}

TEST(Study, TrialZeroIsTheDefaultAndStoreHasOneLinePerTrial) {
  Fixture f;
  auto st = f.store();
  auto out = f.run(*st, options("random", 12));
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(out->trials.size(), 12u);
  EXPECT_EQ(out->trials[0].key, f.space.key(f.space.default_config()));
  const auto lines = test::lines_of(test::read_file(f.dir / "study" / "trials.jsonl"));
  ASSERT_EQ(lines.size(), 12u);
  std::set<std::string> keys;
  for (size_t i = 0; i < lines.size(); ++i) {
    Json j = Json::parse(lines[i]);
    EXPECT_EQ(j["number"].get<int64_t>(), static_cast<int64_t>(i));
    EXPECT_EQ(j["state"], "ok");
    EXPECT_TRUE(j["config"].is_object());
    EXPECT_TRUE(j["config"].contains("algo"));
    EXPECT_TRUE(j["value"].is_number());
    EXPECT_EQ(j["measurements"].size(), 1u);
    keys.insert(j["key"].get<std::string>());
  }
  EXPECT_EQ(keys.size(), 12u);
  Json study = Json::parse(test::read_file(f.dir / "study" / "study.json"));
  EXPECT_EQ(study["strategy"], "random");
  EXPECT_EQ(study["seed"], 1);
  EXPECT_EQ(study["space"]["name"], "land");
  EXPECT_EQ(study["fingerprint"]["id"], "test");
}

TEST(Study, StoreRoundTripReproducesTheTrials) {
  Fixture f;
  auto st = f.store();
  auto out = f.run(*st, options("random", 8));
  ASSERT_TRUE(out.has_value());
  int torn = -1;
  auto back = load_trials(*f.store(), f.space, &torn);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(torn, 0);
  ASSERT_EQ(back->size(), out->trials.size());
  for (size_t i = 0; i < back->size(); ++i) {
    EXPECT_EQ((*back)[i].key, out->trials[i].key);
    EXPECT_EQ((*back)[i].config, out->trials[i].config);
    EXPECT_DOUBLE_EQ(*(*back)[i].value, *out->trials[i].value);
    EXPECT_EQ((*back)[i].to_json(f.space), out->trials[i].to_json(f.space));
  }
}

TEST(Study, ResumeContinuesWithoutRepeatingAndMatchesAnUninterruptedRun) {
  Fixture f;
  {
    auto st = f.store("whole");
    ASSERT_TRUE(f.run(*st, options("random", 20, 5)).has_value());
  }
  {
    auto st = f.store("parts");
    ASSERT_TRUE(f.run(*st, options("random", 7, 5)).has_value());  // "interrupted" after 7
  }
  auto st = f.store("parts");
  auto resumed = f.run(*st, options("random", 20, 5, true));
  ASSERT_TRUE(resumed.has_value()) << resumed.error().message;
  EXPECT_EQ(resumed->resumed_trials, 7);
  ASSERT_EQ(resumed->trials.size(), 20u);
  std::set<std::string> keys;
  for (const auto& t : resumed->trials) keys.insert(t.key);
  EXPECT_EQ(keys.size(), 20u);
  // Seeded strategies resume exactly where they stopped.
  const auto whole = test::lines_of(test::read_file(f.dir / "whole" / "trials.jsonl"));
  const auto parts = test::lines_of(test::read_file(f.dir / "parts" / "trials.jsonl"));
  ASSERT_EQ(whole.size(), parts.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(Json::parse(whole[i])["key"], Json::parse(parts[i])["key"]) << "trial " << i;
    EXPECT_EQ(Json::parse(parts[i])["number"].get<size_t>(), i);
  }
}

TEST(Study, ResumeToleratesATornLastLine) {
  Fixture f;
  {
    auto st = f.store();
    ASSERT_TRUE(f.run(*st, options("grid", 5)).has_value());
  }
  const fs::path trials = f.dir / "study" / "trials.jsonl";
  std::string text = test::read_file(trials);
  test::write_file(trials, text + "{\"number\": 5, \"state\": \"ok\", \"conf");  // a crash mid-write
  std::vector<std::string> warnings;
  auto o = options("grid", 9, 1, true);
  o.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  auto st = f.store();
  auto out = f.run(*st, o);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("torn"), std::string::npos);
  const auto lines = test::lines_of(test::read_file(trials));
  ASSERT_EQ(lines.size(), 9u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(Json::parse(lines[i])["number"].get<size_t>(), i);
}

TEST(Study, ResumeRefusesADifferentStudy) {
  Fixture f;
  {
    auto st = f.store();
    ASSERT_TRUE(f.run(*st, options("random", 4)).has_value());
  }
  // Another strategy or seed.
  for (auto o : {options("grid", 8, 1, true), options("random", 8, 2, true)}) {
    auto st = f.store();
    auto out = f.run(*st, o);
    ASSERT_FALSE(out.has_value());
    EXPECT_EQ(out.error().exit_code(), 2);
    EXPECT_NE(out.error().message.find("refusing to resume"), std::string::npos) << out.error().message;
  }
  // Another workload.
  f.workload.sizes = {0, 1};
  {
    auto st = f.store();
    auto out = f.run(*st, options("random", 8, 1, true));
    ASSERT_FALSE(out.has_value());
    EXPECT_NE(out.error().message.find("workload"), std::string::npos) << out.error().message;
  }
  f.workload.sizes = {0};
  // Another space: the landscape changed.
  test::write_file(f.dir / "land.csv", test::landscape_csv() + "tree,5,1,1\n");
  Space changed = std::move(Space::load_file(f.dir / "space.json").value());
  auto k = std::move(make_kernel(changed).value());
  auto st2 = f.store();
  auto out2 = run_study(changed, *k, *st2, f.workload, options("random", 8, 1, true), Json::object());
  ASSERT_FALSE(out2.has_value());
  EXPECT_NE(out2.error().message.find("space"), std::string::npos) << out2.error().message;
}

TEST(Study, RefusesToOverwriteOrToResumeNothing) {
  Fixture f;
  {
    auto st = f.store();
    ASSERT_TRUE(f.run(*st, options("random", 3)).has_value());
  }
  auto st = f.store();
  auto again = f.run(*st, options("random", 3));
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message.find("--resume"), std::string::npos);
  auto empty = f.store("empty");
  auto nothing = f.run(*empty, options("random", 3, 1, true));
  ASSERT_FALSE(nothing.has_value());
  EXPECT_EQ(nothing.error().exit_code(), 2);
}

TEST(Study, UnwritableOutputDirectoryIsAnInputError) {
  Fixture f;
  test::write_file(f.dir / "afile", "x");
  auto st = open_store("dir", (f.dir / "afile" / "study").string());
  ASSERT_TRUE(st.has_value());
  auto out = f.run(**st, options("random", 3));
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().exit_code(), 2);
  EXPECT_NE(out.error().message.find("choose another --out"), std::string::npos) << out.error().message;
}

// Reports 1 + (the value of TEST_ALGO seen during the measurement == "tree").
class EnvEcho final : public Kernel {
 public:
  std::vector<std::string> native_params() const override { return {}; }
  Measurement measure(const Space&, const Config&, uint64_t bytes, const MeasureSettings&,
                      const MeasureContext&) override {
    Measurement m;
    m.bytes = bytes;
    const char* v = std::getenv("TEST_ALGO");
    m.value = v && std::string(v) == "tree" ? 2.0 : 1.0;
    if (!v) {
      m.state = State::failed;
      m.error = "TEST_ALGO is not set";
    }
    return m;
  }
};
ACCELTUNE_REGISTER(KernelInfo, "test-env-echo",
                   (KernelInfo{"test kernel", false, [] { return std::unique_ptr<Kernel>(new EnvEcho()); }}))

TEST(Study, EnvBoundParamsAreSetForEachTrialAndRestoredAfter) {
  unsetenv("TEST_ALGO");
  Space s = test::space_from_text(R"({"name": "e", "kernel": "test-env-echo", "sizes": [1], "params": [
    {"name": "algo", "kind": "categorical", "values": ["ring", "tree"], "default": "ring", "env": "TEST_ALGO"}]})");
  auto k = make_kernel(s);
  ASSERT_TRUE(k.has_value()) << k.error().message;
  test::TempDir dir;
  auto st = std::move(open_store("dir", (dir / "s").string()).value());
  Workload w;
  w.kernel = "test-env-echo";
  w.sizes = {1};
  auto o = options("grid", 10);
  o.isolation = Isolation::in_process;  // the test kernel lives in this binary only
  auto out = run_study(s, **k, *st, w, o, Json::object());
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(out->trials.size(), 2u);
  EXPECT_EQ(out->trials[0].state, State::ok) << out->trials[0].error;
  EXPECT_DOUBLE_EQ(*out->trials[0].value, 1.0);  // ring
  EXPECT_DOUBLE_EQ(*out->trials[1].value, 2.0);  // tree
  EXPECT_EQ(std::getenv("TEST_ALGO"), nullptr);
}

TEST(Kernels, AParamNeitherEnvBoundNorNativeIsRejected) {
  Space s = test::space_from_text(R"({"name": "e", "kernel": "test-env-echo", "params": [
    {"name": "algo", "kind": "categorical", "values": ["ring"], "default": "ring"}]})");
  auto k = make_kernel(s);
  ASSERT_FALSE(k.has_value());
  EXPECT_EQ(k.error().exit_code(), 2);
  EXPECT_NE(k.error().message.find("'algo' is neither bound"), std::string::npos) << k.error().message;
  Space u = test::space_from_text(R"({"name": "e", "kernel": "warp-drive", "params": [
    {"name": "algo", "kind": "categorical", "values": ["ring"], "default": "ring"}]})");
  auto ku = make_kernel(u);
  ASSERT_FALSE(ku.has_value());
  EXPECT_NE(ku.error().message.find("unknown kernel 'warp-drive'"), std::string::npos);
  EXPECT_EQ(ku.error().message.find("test-env-echo"), std::string::npos);  // unlisted kernels stay hidden
}

TEST(Best, TablePicksTheBestPerSizeAndRatiosAgainstTheDefault) {
  Fixture f;
  auto st = f.store();
  auto out = f.run(*st, options("grid", 100));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->stop_reason, "every valid config was measured");
  const BestTable& b = out->best;
  ASSERT_EQ(b.sizes.size(), 1u);
  EXPECT_EQ(b.sizes[0].best_config, (Json{{"algo", "tree"}, {"a", 3}, {"b", 4}}));
  EXPECT_DOUBLE_EQ(b.sizes[0].best_value, 100.0);
  const double def = test::landscape_value(1, 1, "ring");
  EXPECT_DOUBLE_EQ(*b.sizes[0].default_value, def);
  EXPECT_DOUBLE_EQ(*b.sizes[0].ratio, 100.0 / def);
  EXPECT_EQ(b.env.at("algo"), "TEST_ALGO");
  // best.json on disk is the same table and parses back.
  Json disk = Json::parse(test::read_file(f.dir / "study" / "best.json"));
  EXPECT_EQ(disk, b.to_json());
  auto back = BestTable::from_json(disk);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->to_json(), disk);
}

TEST(Best, MultiSizeTablesPickPerSize) {
  Space s = test::space_from_text(R"({"name": "t", "kernel": "k", "params": [
    {"name": "x", "kind": "int", "min": 1, "max": 3, "default": 1}]})");
  Workload w;
  w.sizes = {100, 200};
  auto trial = [&](int64_t n, int x, double v100, double v200) {
    Trial t;
    t.number = n;
    t.config = s.default_config();
    t.config.index[0] = static_cast<uint32_t>(x - 1);
    t.key = s.key(t.config);
    Measurement a, b;
    a.bytes = 100;
    a.value = v100;
    b.bytes = 200;
    b.value = v200;
    t.measurements = {a, b};
    summarise(t);
    return t;
  };
  std::vector<Trial> trials = {trial(0, 1, 10, 10), trial(1, 2, 30, 12), trial(2, 3, 11, 40)};
  BestTable b = compute_best(s, w, trials, "GB/s");
  EXPECT_EQ(*b.sizes[0].best_trial, 1);
  EXPECT_EQ(*b.sizes[1].best_trial, 2);
  EXPECT_DOUBLE_EQ(*b.sizes[0].ratio, 3.0);
  EXPECT_DOUBLE_EQ(*b.sizes[1].ratio, 4.0);
  EXPECT_EQ(*b.overall_trial, 2);  // sqrt(11*40) > sqrt(30*12)
}

// What a value is, where the unit does not say it (busbw from which rank's time): taken from the
// measurements, kept in best.json, absent where no kernel said.
TEST(Best, SaysWhatAValueIsWhenTheKernelSays) {
  Space s = test::space_from_text(R"({"name": "t", "kernel": "k", "params": [
    {"name": "x", "kind": "int", "min": 1, "max": 2, "default": 1}]})");
  Workload w;
  w.sizes = {100};
  auto trial = [&](int64_t n, int x, const char* value_is) {
    Trial t;
    t.number = n;
    t.config = s.default_config();
    t.config.index[0] = static_cast<uint32_t>(x - 1);
    t.key = s.key(t.config);
    Measurement a;
    a.bytes = 100;
    a.value = 10.0 * x;
    if (value_is) a.details["value_is"] = value_is;
    t.measurements = {a};
    summarise(t);
    return t;
  };
  const BestTable plain = compute_best(s, w, {trial(0, 1, nullptr), trial(1, 2, nullptr)}, "GB/s");
  EXPECT_EQ(plain.value_is, "");
  EXPECT_FALSE(plain.to_json().contains("value_is"));
  const BestTable said = compute_best(s, w, {trial(0, 1, "busbw from the mean of the ranks' times"), trial(1, 2, nullptr)},
                                      "GB/s");
  EXPECT_EQ(said.value_is, "busbw from the mean of the ranks' times");
  auto back = BestTable::from_json(said.to_json());
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->value_is, said.value_is);
  Json bad = said.to_json();
  bad["value_is"] = 3;
  EXPECT_FALSE(BestTable::from_json(bad).has_value());
}

TEST(Export, JsonAndEnv) {
  Fixture f;
  auto st = f.store();
  auto out = f.run(*st, options("grid", 100));
  ASSERT_TRUE(out.has_value());
  auto json = emit("json", out->best);
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(Json::parse(*json), out->best.to_json());
  auto env = emit("env", out->best);
  ASSERT_TRUE(env.has_value());
  const auto lines = test::lines_of(*env);
  std::vector<std::string> assignments;
  for (const auto& l : lines) {
    if (l[0] != '#') assignments.push_back(l);
  }
  EXPECT_EQ(assignments, (std::vector<std::string>{"TEST_ALGO=tree"}));
  auto bad = emit("yaml", out->best);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().exit_code(), 2);
}

TEST(Study, TimeLimitStopsStartingTrials) {
  Fixture f;
  auto st = f.store();
  auto o = options("random", 1000);
  o.time_limit_seconds = 1e-9;
  auto out = f.run(*st, o);
  ASSERT_TRUE(out.has_value());
  EXPECT_LE(out->trials.size(), 1u);
  EXPECT_EQ(out->stop_reason, "time limit reached");
}

}  // namespace
}  // namespace acceltune
