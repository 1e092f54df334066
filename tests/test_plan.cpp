// Export plans: one job-wide assignment chosen jointly over the sizes, per-size choices under it,
// fallbacks, and the variables every export writes for it.
#include <gtest/gtest.h>

#include "tests/helpers.hpp"
#include "tuner/certify.hpp"
#include "tuner/delivery.hpp"
#include "tuner/kernel.hpp"
#include "tuner/plan.hpp"
#include "tuner/runner.hpp"
#include "tuner/space.hpp"
#include "tuner/study.hpp"
#include "tuner/verify.hpp"

namespace acceltune {
namespace {

// A sized replay landscape of an MPI-like space: the messaging layer is read once per job, the
// algorithm per size (the variables the study binds them to decide which, as a real study's do).
struct MpiLike {
  test::TempDir dir;
  Space space;
  std::unique_ptr<Kernel> kernel;
  std::vector<Trial> trials;
  BestTable best;

  // `columns`: the landscape's params (another family's, bound by the caller after bind()).
  explicit MpiLike(const std::string& rows, const std::string& columns = "pml,alg")
      : space([&] {
          test::write_file(dir / "l.csv", columns + ",bytes,objective,objective_std\n" + rows);
          return std::move(SpaceLoaderRegistry::instance().find(".csv")->load(dir / "l.csv").value());
        }()),
        kernel(std::move(make_kernel(space).value())) {
    auto st = std::move(open_store("dir", (dir / "s").string()).value());
    Workload w;
    w.kernel = "replay";
    w.sizes = space.sizes();
    StudyOptions o;
    o.strategy = "grid";
    o.budget = 4;
    o.certify.top = 0;
    auto out = run_study(space, *kernel, *st, w, o, Json::object());
    EXPECT_TRUE(out.has_value()) << out.error().message;
    trials = out->trials;
    best = out->best;
    bind();
  }

  // The bindings of the shipped mpi-allreduce space.
  void bind() {
    best.kernel = "mpi-coll";
    best.env = {{"pml", "OMPI_MCA_pml"}, {"alg", "OMPI_MCA_coll_tuned_allreduce_algorithm"}};
  }

  void certify_plan() {
    RunnerOptions ro;
    ro.isolation = Isolation::in_process;
    TrialRunner runner(space, *kernel, ro);
    CertifyOptions co;
    co.top = 2;
    co.rounds = 6;
    certify(best, space, trials, runner, co, nullptr, nullptr);
  }
};

// ob1 is the default messaging layer (first row), ignore the default algorithm.
constexpr const char* kUcxSlowAtLargeSizes =
    "ob1,ignore,1024,10,0.1\n"
    "ob1,rd,1024,15,0.1\n"
    "ucx,ignore,1024,30,0.1\n"
    "ucx,rd,1024,25,0.1\n"
    "ob1,ignore,1048576,100,1\n"
    "ob1,rd,1048576,90,1\n"
    "ucx,ignore,1048576,60,1\n"
    "ucx,rd,1048576,55,1\n";

TEST(Plan, ScopesComeFromTheFormatsThatCarryTheParams) {
  MpiLike l(kUcxSlowAtLargeSizes);
  const auto scopes = param_scopes(l.best.kernel, l.best.default_config, l.best.env);
  EXPECT_EQ(scopes.at("pml"), Scope::job);       // an environment variable, read once per job
  EXPECT_EQ(scopes.at("alg"), Scope::per_size);  // the rules file carries it per size
  EXPECT_EQ(param_scopes("replay", l.best.default_config, {}).at("alg"), Scope::application);
}

TEST(Plan, AJobWidePartThatSlowsASizeFallsBackAsAWhole) {
  MpiLike l(kUcxSlowAtLargeSizes);
  // Per size alone, ucx wins 1K by 3x; jointly it is the first candidate (geometric mean 1.34x).
  const auto scopes = param_scopes(l.best.kernel, l.best.default_config, l.best.env);
  const auto jobs = joint_candidates(l.space, l.trials, l.space.sizes(), scopes);
  ASSERT_FALSE(jobs.empty());
  EXPECT_EQ(jobs.front(), (Json{{"pml", "ucx"}}));
  l.certify_plan();
  // But ucx is 0.6x the defaults at 1M, and a job cannot switch it off per size.
  EXPECT_EQ(l.best.plan.job, (Json{{"pml", "ob1"}}));
  EXPECT_TRUE(l.best.plan.job_is_default);
  ASSERT_FALSE(l.best.plan.notes.empty());
  EXPECT_NE(l.best.plan.notes.front().find("1M"), std::string::npos) << l.best.plan.notes.front();
  // Under ob1 the 1K size still gains per size (rd, 1.5x), and 1M keeps the library's choice.
  EXPECT_EQ(l.best.sizes[0].chosen_config, (Json{{"pml", "ob1"}, {"alg", "rd"}}));
  EXPECT_EQ(l.best.sizes[1].chosen_config, l.best.default_config);
  for (const auto& r : l.best.ranges) EXPECT_EQ(r.config["pml"], "ob1") << r.config.dump();
}

TEST(Plan, AJobWidePartThatPaysSomewhereAndCostsNowhereIsKept) {
  MpiLike l(
      "ob1,ignore,1024,10,0.1\n"
      "ob1,rd,1024,15,0.1\n"
      "ucx,ignore,1024,30,0.1\n"
      "ucx,rd,1024,25,0.1\n"
      "ob1,ignore,1048576,100,1\n"
      "ob1,rd,1048576,140,1\n"
      "ucx,ignore,1048576,100,1\n"
      "ucx,rd,1048576,100,1\n");
  l.certify_plan();
  EXPECT_EQ(l.best.plan.job, (Json{{"pml", "ucx"}}));
  EXPECT_TRUE(l.best.plan.notes.empty());
  // 1K: ucx with the library's algorithm (its own best); 1M: rd under ob1 was faster, but the job
  // runs ucx, so 1M gets ucx with the library's choice, no slower than the defaults.
  EXPECT_EQ(l.best.sizes[0].chosen_config, (Json{{"pml", "ucx"}, {"alg", "ignore"}}));
  EXPECT_EQ(l.best.sizes[1].chosen_config, (Json{{"pml", "ucx"}, {"alg", "ignore"}}));
  EXPECT_TRUE(l.best.sizes[0].significant);
  EXPECT_FALSE(l.best.sizes[1].significant);
  EXPECT_GE(*l.best.sizes[1].ci_high, 1.0);
  EXPECT_EQ(l.best.export_config, (Json{{"pml", "ucx"}, {"alg", "ignore"}}));
}

TEST(Plan, TheApplicationsOwnParamsStayOutOfThePlanAndItsCertifiedGain) {
  // tcp-stream's MTU is the host's (tcp-script sets it), its streams the application's: four
  // streams are worth 3x inside acceltune, MTU 9000 alone 1.2x, and only the latter reaches a job.
  MpiLike l(
      "1500,1,65536,10,0.1\n"
      "1500,4,65536,30,0.1\n"
      "9000,1,65536,12,0.1\n"
      "9000,4,65536,40,0.1\n"
      "1500,1,1048576,100,1\n"
      "1500,4,1048576,300,1\n"
      "9000,1,1048576,120,1\n"
      "9000,4,1048576,400,1\n",
      "mtu,streams");
  l.best.kernel = "tcp-stream";
  l.best.env.clear();
  l.certify_plan();
  EXPECT_EQ(l.best.plan.scopes.at("mtu"), Scope::job);
  EXPECT_EQ(l.best.plan.scopes.at("streams"), Scope::application);
  EXPECT_EQ(l.best.plan.job, (Json{{"mtu", 9000}}));
  for (const auto& s : l.best.sizes) {
    EXPECT_EQ(s.chosen_config, (Json{{"mtu", 9000}, {"streams", 1}})) << s.bytes;
    ASSERT_TRUE(s.certified_ratio.has_value());
    EXPECT_NEAR(*s.certified_ratio, 1.2, 0.1) << s.bytes;  // the job-wide part alone, not 4x
    EXPECT_TRUE(s.significant);
  }
  // The search's best is advice, with its gain inside acceltune, at every size.
  const auto advice = application_advice_lines(l.best);
  ASSERT_EQ(advice.size(), 2u);
  EXPECT_EQ(advice[0].rfind("at 64K: streams=4 (", 0), 0u) << advice[0];
  EXPECT_NE(advice[0].find("x the defaults, observed in the search)"), std::string::npos) << advice[0];
  // The script sets only what a host sets, and advises the rest in comments.
  auto script = emit("tcp-script", l.best);
  ASSERT_TRUE(script.has_value()) << script.error().message;
  EXPECT_NE(script->find("ip link set dev IFACE mtu 9000\n"), std::string::npos) << *script;
  EXPECT_NE(script->find("# Not to be applied: not verified"), std::string::npos) << *script;  // no delivery yet
  EXPECT_NE(script->find("#   at 1M: streams=4"), std::string::npos) << *script;
  EXPECT_EQ(script->find("\nsysctl -w net.core"), std::string::npos) << *script;
  EXPECT_EQ(script->find("\nsysctl -w net.ipv4.tcp_wmem"), std::string::npos) << *script;
  // A space whose params are all the application's (host-copy) is certified as it is.
  EXPECT_TRUE(plan_may_carry(Json{{"streams", 4}}, Json{{"streams", 1}}, {{"streams", Scope::application}}));
  EXPECT_FALSE(plan_may_carry(Json{{"mtu", 9000}, {"streams", 4}}, Json{{"mtu", 1500}, {"streams", 1}},
                              {{"mtu", Scope::job}, {"streams", Scope::application}}));
}

// A tcp-stream table whose plan sets congestion control `cc`, delivered with `verdict` ("" for
// not verified).
BestTable tcp_table(const std::string& cc, const std::string& verdict) {
  BestTable b;
  b.space = "tcp-stream";
  b.kernel = "tcp-stream";
  b.trials = b.trials_ok = 10;
  b.certified = true;
  b.default_config = Json{{"mtu", 1500}, {"congestion", "cubic"}, {"streams", 1}};
  b.plan.scopes = param_scopes(b.kernel, b.default_config, b.env);
  b.plan.job = Json{{"mtu", 1500}, {"congestion", cc}};
  b.plan.job_is_default = cc == "cubic";
  SizeBest s;
  s.bytes = 1 << 20;
  s.chosen_config = with_job(b.default_config, b.plan.job);
  b.sizes.push_back(s);
  finish_ranges(b);
  b.study = Json{{"space", {{"name", "tcp-stream"}, {"placement", "netns"}}}};
  if (!verdict.empty()) {
    b.delivery.state = "measured";
    b.delivery.verdict = verdict;
    b.delivery.verdict_why = "at 1M the plan ran 0.95x [0.80, 1.10] the defaults";
  }
  return b;
}

TEST(Plan, AHostSettingIsActiveOnlyWhenItsDeliveredVerdictShips) {
  // Not shipped (undecided, or never verified): the line is a comment with the reason, and the
  // script, run, changes nothing and prints this host's value beside the proposed one.
  for (const std::string verdict : {"undecided", ""}) {
    auto script = emit("tcp-script", tcp_table("reno", verdict));
    ASSERT_TRUE(script.has_value()) << script.error().message;
    EXPECT_EQ(script->find("\nsysctl -w net.ipv4.tcp_congestion_control"), std::string::npos) << *script;
    EXPECT_NE(script->find("# sysctl -w net.ipv4.tcp_congestion_control=reno\n"), std::string::npos) << *script;
    EXPECT_NE(script->find(verdict.empty() ? "# Not applied: not verified" : "# Not applied: its delivered verdict is "
                                                                             "'undecided' (at 1M"),
              std::string::npos)
        << *script;
    EXPECT_NE(script->find("# Measured over a veth pair"), std::string::npos) << *script;
    test::TempDir dir;
    test::write_file(dir / "tcp.sh", *script);
    const auto run = test::run_shell("sh " + (dir / "tcp.sh").string());
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_NE(run.out.find("net.ipv4.tcp_congestion_control: this host has "), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("; proposed reno (not applied: "), std::string::npos) << run.out;
  }
  // Shipped: active, with the current value shown first.
  auto script = emit("tcp-script", tcp_table("reno", "ships"));
  ASSERT_TRUE(script.has_value()) << script.error().message;
  const size_t show = script->find("\nshow net.ipv4.tcp_congestion_control reno 'applied: its delivered verdict ships'\n");
  const size_t set = script->find("\nsysctl -w net.ipv4.tcp_congestion_control=reno\n");
  ASSERT_NE(show, std::string::npos) << *script;
  ASSERT_NE(set, std::string::npos) << *script;
  EXPECT_LT(show, set);
}

TEST(Plan, WithoutCertificationTheFirstJointCandidateIsThePlan) {
  MpiLike l(kUcxSlowAtLargeSizes);
  choose_plan(l.best, l.space, l.trials, nullptr);
  EXPECT_EQ(l.best.plan.job, (Json{{"pml", "ucx"}}));
  // Job-wide params are one value across every range.
  for (const auto& r : l.best.ranges) EXPECT_EQ(r.config["pml"], "ucx") << r.config.dump();
}

// A table with a study record and a directory, as load_study gives exports.
BestTable mpi_table(const test::TempDir& dir, const Json& job, const Json& small_alg) {
  BestTable b;
  b.space = "mpi-allreduce";
  b.kernel = "mpi-coll";
  b.trials = b.trials_ok = 20;
  b.overall_trial = 3;
  b.certified = true;
  b.env = {{"algorithm", "OMPI_MCA_coll_tuned_allreduce_algorithm"}, {"pml", "OMPI_MCA_pml"}};
  b.default_config = Json{{"algorithm", "ignore"}, {"pml", "ob1"}};
  b.plan.scopes = param_scopes(b.kernel, b.default_config, b.env);
  b.plan.job = job;
  b.plan.job_is_default = job == job_part(b.default_config, b.plan.scopes);
  for (uint64_t bytes : {32768u, 1048576u}) {
    SizeBest s;
    s.bytes = bytes;
    s.chosen_config = with_job(b.default_config, job);
    if (bytes == 32768) s.chosen_config["algorithm"] = small_alg;
    s.chosen_is_default = s.chosen_config == b.default_config;
    b.sizes.push_back(s);
  }
  finish_ranges(b);
  b.study = Json{{"space",
                  {{"name", "mpi-allreduce"},
                   {"kernel", "mpi-coll"},
                   {"job_advice", "mpirun --bind-to none"},
                   {"params",
                    {{{"name", "algorithm"}, {"env", "OMPI_MCA_coll_tuned_allreduce_algorithm"},
                      {"values", {"ignore", "recursive_doubling"}}},
                     {{"name", "pml"}, {"env", "OMPI_MCA_pml"}, {"values", {"ob1", "ucx"}},
                      {"needs", {{"ucx", {{"OMPI_MCA_pml_ucx_tls", "any"}, {"OMPI_MCA_pml_ucx_devices", "any"}}}}}}}}}},
                 {"workload", {{"operation", "allreduce"}, {"ranks", 4}}}};
  b.dir = dir.path().string();
  return b;
}

TEST(Plan, TheSizesWhereAPlanLoadsTheDefaultsAreKnownFromThePlan) {
  test::TempDir dir;
  // Under ob1 (the library's), 32K takes recursive doubling and 1M the library's own choice.
  EXPECT_EQ(sizes_loading_the_defaults(mpi_table(dir, Json{{"pml", "ob1"}}, "recursive_doubling")),
            (std::set<uint64_t>{1048576}));
  // Under ucx every size differs from the defaults.
  EXPECT_TRUE(sizes_loading_the_defaults(mpi_table(dir, Json{{"pml", "ucx"}}, "recursive_doubling")).empty());
  EXPECT_TRUE(sizes_loading_the_defaults(mpi_table(dir, Json{{"pml", "ucx"}}, "ignore")).empty());
}

// The export's header tells what proves the plan over all its sizes: the delivered verdict, its
// best size and its worst beside it, the certified figures the same way, each named for what it is.
TEST(Plan, TheExportNamesTheVerdictAndTheWorstSizeBesideTheBest) {
  test::TempDir dir;
  BestTable b = mpi_table(dir, Json{{"pml", "ucx"}}, "ignore");
  const double ratios[2][3] = {{1.85, 1.63, 2.10}, {0.98, 0.95, 1.01}};
  for (size_t i = 0; i < 2; ++i) {
    SizeBest& s = b.sizes[i];
    s.certified = true;
    s.significant = i == 0;
    s.certified_ratio = ratios[i][0] + 0.5;
    s.ci_low = ratios[i][1] + 0.5;
    s.ci_high = ratios[i][2] + 0.5;
    Delivered d;
    d.ratio = ratios[i][0], d.ci_low = ratios[i][1], d.ci_high = ratios[i][2];
    s.delivered = d;
  }
  b.delivery.state = "measured";
  b.delivery.rounds = 12;
  b.delivery.verdict = "ships";
  b.delivery.verdict_why = "at 32K the plan ran 1.85x [1.63, 2.10] the defaults over 12 rounds";
  auto env = emit("env", b);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_NE(env->find("# delivered (a plain job, 12 rounds): verdict 'ships': at 32K the plan ran"), std::string::npos)
      << *env;
  EXPECT_NE(env->find("# delivered per size: 1.85x [1.63, 2.10] at 32K, worst 0.98x [0.95, 1.01] at 1M\n"),
            std::string::npos)
      << *env;
  EXPECT_NE(env->find("# certified (inside acceltune): 2.35x [2.13, 2.60] at 32K, worst 1.48x [1.45, 1.51] at 1M\n"),
            std::string::npos)
      << *env;
  b.delivery = Delivery{};
  b.delivery.why = "kernel x has no plain client";
  env = emit("env", b);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_NE(env->find("# not verified: kernel x has no plain client\n"), std::string::npos) << *env;
}

TEST(Plan, AUcxWinnerExportsWhatAJobNeedsToStartAndNoHygiene) {
  test::TempDir dir;
  set_hygiene_env("UCX_HANDLE_ERRORS", "none");  // what the ucx kernel sets in acceltune's own process
  const BestTable b = mpi_table(dir, Json{{"pml", "ucx"}}, "ignore");
  auto env = emit("env", b);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_NE(env->find("\nOMPI_MCA_pml=ucx\n"), std::string::npos) << *env;
  EXPECT_NE(env->find("\nOMPI_MCA_pml_ucx_tls=any\n"), std::string::npos) << *env;
  EXPECT_NE(env->find("\nOMPI_MCA_pml_ucx_devices=any\n"), std::string::npos) << *env;
  EXPECT_EQ(env->find("UCX_HANDLE_ERRORS"), std::string::npos) << *env;
  EXPECT_EQ(env->find("ACCELTUNE_HYGIENE"), std::string::npos) << *env;
  // No per-size choice differs from the library's: no rules file, no forced algorithm.
  EXPECT_EQ(env->find("coll_tuned"), std::string::npos) << *env;
  EXPECT_NE(env->find("# launcher advice: mpirun --bind-to none"), std::string::npos) << *env;
  // The job a delivered comparison starts gets the same, and no hygiene either.
  DeliveryArm arm{"plan", plan_env(b)->vars, b.plan.job};
  for (const auto& kv : job_environment(b.study, arm)) {
    EXPECT_NE(kv.rfind("UCX_HANDLE_ERRORS=", 0), 0u) << kv;
  }
}

TEST(Plan, TheEnvExportSwitchesTheRulesFileOnAndForcesNoAlgorithm) {
  test::TempDir dir;
  const BestTable b = mpi_table(dir, Json{{"pml", "ob1"}}, "recursive_doubling");
  ASSERT_TRUE(write_plan_files(b));
  auto env = emit("env", b);
  ASSERT_TRUE(env) << env.error().message;
  const std::string rules = (std::filesystem::absolute(dir.path()) / "plan" / "ompi-rules.conf").string();
  EXPECT_NE(env->find("\nOMPI_MCA_coll_tuned_use_dynamic_rules=1\n"), std::string::npos) << *env;
  EXPECT_NE(env->find("\nOMPI_MCA_coll_tuned_dynamic_rules_filename=" + rules + "\n"), std::string::npos) << *env;
  EXPECT_EQ(env->find("OMPI_MCA_coll_tuned_allreduce_algorithm="), std::string::npos) << *env;
  EXPECT_EQ(env->find("OMPI_MCA_pml="), std::string::npos) << *env;  // ob1 is the library's own
  const std::string file = test::read_file(rules);
  EXPECT_NE(file.find("\n0 3 0 0  # [0 B, 1048575 B] recursive_doubling\n"), std::string::npos) << file;
  // A study copied without its directory cannot name its rules file: a clear refusal.
  BestTable lost = b;
  lost.dir.clear();
  auto refused = emit("env", lost);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("study directory"), std::string::npos) << refused.error().message;
}

TEST(Plan, JobWideParamsAreOneValueInEveryExport) {
  test::TempDir dir;
  const BestTable b = mpi_table(dir, Json{{"pml", "ucx"}}, "recursive_doubling");
  ASSERT_TRUE(write_plan_files(b));
  for (const auto& r : b.ranges) EXPECT_EQ(r.config["pml"], "ucx");
  auto rules = emit("ompi-rules", b);
  ASSERT_TRUE(rules) << rules.error().message;
  EXPECT_NE(rules->find("# with the job's environment: OMPI_MCA_pml=ucx"), std::string::npos) << *rules;
  EXPECT_EQ(rules->find("measured with"), std::string::npos) << *rules;  // no range chose another pml
  auto env = emit("env", b);
  ASSERT_TRUE(env);
  size_t count = 0;
  for (size_t at = env->find("OMPI_MCA_pml="); at != std::string::npos; at = env->find("OMPI_MCA_pml=", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << *env;
}

TEST(Plan, ADeliveredSlowdownFallsBackPerSizeThenAsAWhole) {
  test::TempDir dir;
  BestTable b = mpi_table(dir, Json{{"pml", "ucx"}}, "recursive_doubling");
  b.sizes[0].delivered = test::delivered_gain(0.8, 0.7, 0.9);
  ASSERT_TRUE(apply_delivered_fallback(b));
  // The per-size choice goes first: 32K keeps ucx with the library's algorithm.
  EXPECT_EQ(b.sizes[0].chosen_config, (Json{{"algorithm", "ignore"}, {"pml", "ucx"}}));
  EXPECT_EQ(b.plan.job, (Json{{"pml", "ucx"}}));
  // Still slower with nothing per size to drop: the job-wide part goes, for every size.
  ASSERT_TRUE(apply_delivered_fallback(b));
  EXPECT_TRUE(b.plan.job_is_default);
  for (const auto& s : b.sizes) EXPECT_EQ(s.chosen_config, b.default_config);
  EXPECT_EQ(b.plan.notes.size(), 2u);
  EXPECT_FALSE(apply_delivered_fallback(b));  // nothing left to fall back
}

TEST(Plan, BestJsonReadsBackThePlanAndOlderTablesGetOne) {
  test::TempDir dir;
  BestTable b = mpi_table(dir, Json{{"pml", "ucx"}}, "recursive_doubling");
  b.sizes[0].delivered = test::delivered_gain(1.6, 1.4, 1.8);
  b.delivery.state = "measured";
  const Json j = Json::parse(b.to_json().dump());
  EXPECT_EQ(j["schema"], kBestSchema);
  auto back = BestTable::from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->plan.job, b.plan.job);
  EXPECT_EQ(back->plan.scopes.at("algorithm"), Scope::per_size);
  ASSERT_TRUE(back->sizes[0].delivered);
  EXPECT_DOUBLE_EQ(back->sizes[0].delivered->ci_low, 1.4);
  EXPECT_FALSE(back->sizes[1].delivered);
  // Schema 1: no plan; its export config's job-wide part becomes the plan.
  Json old = j;
  old.erase("schema");
  old.erase("plan");
  old["export_config"] = Json{{"algorithm", "recursive_doubling"}, {"pml", "ucx"}};
  auto legacy = BestTable::from_json(old);
  ASSERT_TRUE(legacy) << legacy.error().message;
  EXPECT_EQ(legacy->plan.job, (Json{{"pml", "ucx"}}));
  EXPECT_EQ(legacy->export_config, (Json{{"algorithm", "ignore"}, {"pml", "ucx"}}));
  // Foreign or corrupt: the field is named.
  Json bad = j;
  bad["sizes"][1]["bytes"] = "lots";
  auto refused = BestTable::from_json(bad);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("sizes[1].bytes"), std::string::npos) << refused.error().message;
  bad = j;
  bad["schema"] = kBestSchema + 1;
  EXPECT_FALSE(BestTable::from_json(bad));
}

// Plan B: when the certified job-wide part does not ship, the search's best per-size choices
// under the library's own job-wide part (ob1 with the rd algorithm at 1K, where it beat ob1's
// default; nothing at 1M, where the default algorithm won).
TEST(Plan, PlanBIsTheBestPerSizeChoiceUnderTheLibrarysOwnJobWidePart) {
  MpiLike l(kUcxSlowAtLargeSizes);
  l.best.plan.scopes = param_scopes(l.best.kernel, l.best.default_config, l.best.env);
  const auto choices = plan_b_choices(l.best, l.space, l.trials);
  ASSERT_EQ(choices.size(), 1u) << Json(choices).dump();
  ASSERT_TRUE(choices.count(1024));
  EXPECT_EQ(choices.at(1024), (Json{{"pml", "ob1"}, {"alg", "rd"}}));

  // Not while the plan's job-wide part is the certified one: only after it went back.
  BestTable b = l.best;
  b.plan.job = Json{{"pml", "ucx"}};
  b.plan.job_is_default = false;
  EXPECT_FALSE(adopt_plan_b(b, choices));
  fall_back_to_defaults(b, "the job-wide part did not ship");
  ASSERT_TRUE(adopt_plan_b(b, choices));
  for (const auto& s : b.sizes) {
    EXPECT_EQ(s.chosen_is_default, s.bytes != 1024) << s.bytes;
    if (s.bytes == 1024) {
      EXPECT_EQ(s.chosen_config["alg"], "rd");
    }
  }
  EXPECT_NE(b.plan.notes.back().find("not certified; the delivered verdict decides"), std::string::npos);
  EXPECT_FALSE(adopt_plan_b(b, {}));  // nothing to adopt
}

}  // namespace
}  // namespace acceltune
