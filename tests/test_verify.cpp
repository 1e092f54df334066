// acceltune verify and the delivered gains in best.json: what a job that loads the plan gets (the
// 4-rank search through mpirun is in test_verify_mpi.cpp, label slow).
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/helpers.hpp"
#include "tests/study_files.hpp"
#include "tuner/best.hpp"
#include "tuner/verify.hpp"

namespace acceltune {
namespace {

TEST(Verify, APlanPaysUnlessASizeIsSignificantlySlower) {
  BestTable b;
  SizeBest s;
  s.bytes = 4096;
  b.sizes.push_back(s);
  EXPECT_TRUE(delivery_pays(b));  // not verified is no evidence against it
  Delivered d;
  d.ratio = 0.97;
  d.ci_low = 0.90;
  d.ci_high = 1.04;
  b.sizes[0].delivered = d;
  EXPECT_TRUE(delivery_pays(b));
  b.sizes[0].delivered->slower = true;
  EXPECT_FALSE(delivery_pays(b));
}

// A host setting is written active only after its delivered verdict ships, with the host's value
// shown beside it: a tcp-stream study whose plan sets congestion control, verified through the
// scripted plain client (ACCELTUNE_TEST_SCRIPTED_DELIVERY, a test seam) with a known outcome.
TEST(Verify, AHostSettingIsActiveInTheScriptOnlyWhenItsScriptedVerdictShips) {
#if !ACCELTUNE_TEST_SEAMS
  GTEST_SKIP() << "built without ACCELTUNE_TEST_SEAMS: no scripted plain client";
#endif
  const auto study = [](const test::TempDir& dir) {
    test::StudySpec spec;
    spec.space_json = R"({"name": "tcp-stream", "kernel": "tcp-stream", "placement": "netns", "params": [
        {"name": "mtu", "kind": "ordinal", "values": [1500, 9000], "default": 1500},
        {"name": "congestion", "kind": "categorical", "values": ["cubic", "reno"], "default": "cubic"},
        {"name": "streams", "kind": "ordinal", "values": [1, 2], "default": 1}]})";
    spec.sizes = {65536, 1048576};
    spec.trials = {{Json::object(), {{65536, 1.0}, {1048576, 2.0}}, ""},
                   {Json{{"congestion", "reno"}}, {{65536, 1.5}, {1048576, 3.0}}, ""}};
    test::write_study(dir / "s", spec);
  };
  for (const auto& [ratio, code, active] : {std::tuple{"1.3", 0, true}, std::tuple{"0.85", 3, false}}) {
    test::TempDir dir;
    study(dir);
    const Json before = Json::parse(test::read_file(dir / "s" / "best.json"));
    ASSERT_EQ(before["plan"]["job"]["congestion"], "reno") << before["plan"].dump();
    auto v = test::run_cli({"verify", "s"}, dir.path(), std::string("ACCELTUNE_TEST_SCRIPTED_DELIVERY=") + ratio);
    EXPECT_EQ(v.exit_code, code) << v.out << v.err;
    EXPECT_NE(v.out.find("a scripted client (test seam)"), std::string::npos) << v.out;
    auto e = test::run_cli({"export", "s", "--format", "tcp-script"}, dir.path());
    ASSERT_EQ(e.exit_code, 0) << e.err;
    const bool set = e.out.find("\nsysctl -w net.ipv4.tcp_congestion_control=reno\n") != std::string::npos;
    EXPECT_EQ(set, active) << ratio << "\n" << e.out;
    if (active) {
      EXPECT_NE(e.out.find("\nshow net.ipv4.tcp_congestion_control reno 'applied: its delivered verdict ships'\n"),
                std::string::npos)
          << e.out;
    } else {
      EXPECT_NE(e.out.find("# sysctl -w net.ipv4.tcp_congestion_control=reno\n"), std::string::npos) << e.out;
      EXPECT_NE(e.out.find("'worse'"), std::string::npos) << e.out;
    }
  }
}

TEST(Verify, AChangedMachineIsReportedFieldByField) {
  const Json a = Json{{"fingerprint_fields", {{"cpu", {{"model", "A"}, {"cores", 2}}}, {"versions", {{"ucx", "1.13"}}}}}};
  Json b = a;
  b["fingerprint_fields"]["versions"]["ucx"] = "1.16";
  b["fingerprint_fields"]["gpus"] = Json::array();
  const auto d = fingerprint_drift(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "versions.ucx: \"1.13\" -> \"1.16\"");
  EXPECT_EQ(d[1], "gpus: absent -> []");
  EXPECT_TRUE(fingerprint_drift(a, a).empty());
}

// A short host-copy study in DIR/s.
test::CliResult search_host_copy(const test::TempDir& dir, int budget) {
  return test::run_cli({"search", "--space", "host-copy", "--budget", std::to_string(budget), "--sizes", "64K",
                        "--max-seconds", "0.02", "--out", "s"},
                       dir.path());
}

TEST(Verify, AFamilyWithoutAPlainClientIsNotVerified) {
  test::TempDir dir;
  auto s = search_host_copy(dir, 3);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto v = test::run_cli({"verify", "s"}, dir.path());
  EXPECT_EQ(v.exit_code, 4) << v.err;  // never 0: `verify DIR && deploy` must not deploy it
  EXPECT_NE(v.out.find("not verified"), std::string::npos) << v.out;
  const Json best = Json::parse(test::read_file(dir / "s" / "best.json"));
  EXPECT_EQ(best["schema"], kBestSchema);
  EXPECT_EQ(best["delivery"]["state"], "not verified");
  EXPECT_NE(best["delivery"]["why"].get<std::string>().find("host-copy"), std::string::npos) << best["delivery"];
  EXPECT_TRUE(best["sizes"][0]["delivered"].is_null());
}

TEST(Verify, ACorruptOrForeignTableNamesTheFileAndField) {
  test::TempDir dir;
  auto s = search_host_copy(dir, 2);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  Json best = Json::parse(test::read_file(dir / "s" / "best.json"));
  best["sizes"][0]["delivered"] = "fast";
  test::write_file(dir / "s" / "best.json", best.dump());
  auto v = test::run_cli({"verify", "s"}, dir.path());
  EXPECT_EQ(v.exit_code, 2) << v.out;
  EXPECT_NE(v.err.find("s/best.json"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("sizes[0].delivered"), std::string::npos) << v.err;
  test::write_file(dir / "s" / "best.json", R"({"some": "other tool's file"})");
  v = test::run_cli({"verify", "s"}, dir.path());
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("'sizes'"), std::string::npos) << v.err;
}

}  // namespace
}  // namespace acceltune
