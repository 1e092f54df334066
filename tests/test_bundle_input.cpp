// A bring-up bundle as the input of every other command: exec and the loader load its merged
// acceltune.env (never its studies' own plans), with its files found beside it after a move;
// verify measures that environment again; best, report and compare show its studies. And the
// first plain `acceltune search` gives a job something to load. On a real bundle of the test
// family (kernels/echo), whose plain client is the family's own copy.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "acceltune/loader.h"
#include "tests/helpers.hpp"
#include "tuner/delivery.hpp"
#include "tuner/family.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

// The variable of an Open MPI rules file, as acceltune.env names it: where bring-up wrote it.
constexpr const char* kRulesVar = "OMPI_MCA_coll_tuned_dynamic_rules_filename";

// A bundle of the test family, made by a real bring-up, then moved: its acceltune.env gains a
// line naming a bundle file where the bundle was first written (as bring-up writes the per-size
// files' lines), and that file beside it.
class BundleInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const fs::path first = *dir_ / "first";
    auto r = test::run_cli({"bringup", "--only", "echo", "--time-limit", "6s", "--out", first.string()}, {});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::string env = test::read_file(first / "acceltune.env");
    env += std::string("\n") + kRulesVar + "=" + (first / "ompi-rules.conf").string() + "\n";
    test::write_file(first / "acceltune.env", env);
    if (!fs::exists(first / "ompi-rules.conf")) test::write_file(first / "ompi-rules.conf", "0\n");
    fs::rename(first, bundle());
    fs::copy(bundle(), *dir_ / "other", fs::copy_options::recursive);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path bundle() { return *dir_ / "moved"; }
  // The active value of `var` in the bundle's acceltune.env ("" when none).
  static std::string env_value(const std::string& var) {
    std::smatch m;
    const std::string env = test::read_file(bundle() / "acceltune.env");
    return std::regex_search(env, m, std::regex("\n" + var + "=([^\n]*)\n")) ? m[1].str() : "";
  }
  static test::TempDir* dir_;
};
test::TempDir* BundleInput::dir_ = nullptr;

TEST_F(BundleInput, ExecLoadsTheMergedEnvironmentWithTheBundlesFilesWhereItLiesNow) {
  const std::string chunk = env_value("ACCELTUNE_ECHO_CHUNK");
  ASSERT_FALSE(chunk.empty()) << test::read_file(bundle() / "acceltune.env");
  auto r = test::run_cli({"exec", "--config", bundle().string(), "--", "sh", "-c",
                          std::string("echo $ACCELTUNE_ECHO_CHUNK $") + kRulesVar});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, chunk + " " + (bundle() / "ompi-rules.conf").string() + "\n");
  // acceltune.env named directly reads the same.
  auto f = test::run_cli({"exec", "--config", (bundle() / "acceltune.env").string(), "--", "sh", "-c",
                          std::string("echo $") + kRulesVar});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(f.out, (bundle() / "ompi-rules.conf").string() + "\n");
}

TEST_F(BundleInput, ALineTheMergeLeftOutIsNotSetThoughTheStudysOwnPlanHasIt) {
  test::TempDir t;
  fs::copy(bundle(), t / "b", fs::copy_options::recursive);
  const std::string env = test::read_file(t / "b" / "acceltune.env");
  const std::string line = "\nACCELTUNE_ECHO_CHUNK=";
  ASSERT_NE(env.find(line), std::string::npos);
  test::write_file(t / "b" / "acceltune.env", std::regex_replace(env, std::regex(line), "\n# ACCELTUNE_ECHO_CHUNK="));
  const Json best = Json::parse(test::read_file(t / "b" / "studies" / "echo" / "best.json"));
  ASSERT_FALSE(best["plan"]["job_is_default"].get<bool>() && best["sizes"][0]["chosen_is_default"].get<bool>())
      << "the study's own plan sets the chunk";
  auto r = test::run_cli({"exec", "--config", (t / "b").string(), "--", "sh", "-c", "echo x${ACCELTUNE_ECHO_CHUNK}x"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "xx\n");
}

TEST_F(BundleInput, TheLoaderLoadsTheBundleChecksItsFingerprintAndFindsItsFiles) {
  for (const fs::path& p : {bundle(), bundle() / "acceltune.env"}) {
    ::unsetenv(kRulesVar);
    ASSERT_EQ(acceltune_apply(p.c_str(), 0), ACCELTUNE_OK) << p << ": " << acceltune_last_error();
    const char* v = std::getenv(kRulesVar);
    EXPECT_EQ(v ? std::string(v) : "", (bundle() / "ompi-rules.conf").string()) << p;
  }
  ::unsetenv(kRulesVar);
  // A folder that is neither says so.
  test::TempDir t;
  EXPECT_NE(acceltune_apply(t.path().c_str(), 0), ACCELTUNE_OK);
  EXPECT_NE(std::string(acceltune_last_error()).find("nor a bring-up bundle"), std::string::npos)
      << acceltune_last_error();
}

TEST_F(BundleInput, BringUpLintsItsOwnBundle) {
  const Json summary = Json::parse(test::read_file(bundle() / "bringup.json"));
  ASSERT_TRUE(summary["lint"].is_array()) << summary.dump().substr(0, 400);
  EXPECT_TRUE(summary["lint"].empty()) << summary["lint"].dump();
}

TEST_F(BundleInput, BestReportAndCompareShowItsStudies) {
  auto b = test::run_cli({"best", bundle().string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("its jobs load acceltune.env"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("space echo"), std::string::npos) << b.out;
  auto one = test::run_cli({"best", bundle().string(), "--study", "echo", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(Json::parse(one.out)["echo"]["space"], "echo");
  auto none = test::run_cli({"best", bundle().string(), "--study", "ucx-shm"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no study of space 'ucx-shm' (it has: echo)"), std::string::npos) << none.err;

  test::TempDir t;
  auto page = test::run_cli({"report", bundle().string(), "--html", (t / "b.html").string()});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_NE(test::read_file(t / "b.html").find("echo"), std::string::npos);
  auto study = test::run_cli({"report", bundle().string(), "--study", "echo", "--html", (t / "s.html").string()});
  ASSERT_EQ(study.exit_code, 0) << study.err;
  EXPECT_NE(study.out.find("space echo"), std::string::npos) << study.out;

  auto cmp = test::run_cli({"compare", bundle().string(), (*dir_ / "other").string()});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find("== space echo"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("compare: 2 studies"), std::string::npos) << cmp.out;
}

TEST_F(BundleInput, VerifyMeasuresTheMergedEnvironmentThroughEachStudysClient) {
  auto v = test::run_cli({"verify", bundle().string(), "--rounds", "3"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;  // 16-byte copies lose to the tuned chunk
  EXPECT_NE(v.out.find("measured through each study's plain client"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("echo: the bundle against the defaults"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("the bundle ships"), std::string::npos) << v.out;
}

TEST_F(BundleInput, VerifySaysWhenTheBundleIsSlowerOrLoadsNothing) {
#if !ACCELTUNE_TEST_SEAMS
  GTEST_SKIP() << "built without ACCELTUNE_TEST_SEAMS: no scripted plain client";
#endif
  auto slow = test::run_cli({"verify", bundle().string(), "--rounds", "3"}, {}, "ACCELTUNE_TEST_SCRIPTED_DELIVERY=0.8");
  EXPECT_EQ(slow.exit_code, 3) << slow.out << slow.err;
  EXPECT_NE(slow.out.find("SLOWER than the defaults"), std::string::npos) << slow.out;
  EXPECT_NE(slow.out.find("the bundle does not ship"), std::string::npos) << slow.out;
  test::TempDir t;
  fs::copy(bundle(), t / "b", fs::copy_options::recursive);
  test::write_file(t / "b" / "acceltune.env", "# nothing\nUCX_RNDV_THRES=8k\n");
  auto nothing = test::run_cli({"verify", (t / "b").string()});
  EXPECT_EQ(nothing.exit_code, 4) << nothing.out << nothing.err;
  EXPECT_NE(nothing.out.find("the bundle sets nothing its job reads"), std::string::npos) << nothing.out;
  // A hand-edited line is linted first (where ucx_info says what UCX reads).
  if (test::have_program("ucx_info")) {
    EXPECT_NE(nothing.out.find("lint: 1 finding in the bundle's files"), std::string::npos) << nothing.out;
    EXPECT_NE(nothing.out.find("acceltune.env:2: UCX_RNDV_THRES"), std::string::npos) << nothing.out;
  }
}

// Without --space, search runs a space whose result a job loads here, says why, and its export is
// in the variables the family's jobs read (the memory-path check's export is empty).
TEST(FirstSearch, WithoutASpaceItSearchesWhatAJobLoadsAndSaysWhy) {
  test::TempDir dir;
  auto r = test::run_cli({"search", "--budget", "3", "--certify-top", "0", "--verify-rounds", "0", "--out", "s"},
                         dir.path(), "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  if (r.err.find("no family here has a result a job loads") != std::string::npos) {
    GTEST_SKIP() << "no family here gives a job something to load: " << r.err.substr(0, 400);
  }
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("acceltune: no --space given: searching "), std::string::npos) << r.err;
  const Json study = Json::parse(test::read_file(dir / "s" / "study.json"));
  const std::string kernel = study["space"]["kernel"].get<std::string>();
  const FamilyInfo* f = family_of_kernel(kernel);
  ASSERT_NE(f, nullptr) << kernel;
  EXPECT_TRUE(f->advice.empty()) << kernel;
  ASSERT_FALSE(f->env_prefixes.empty()) << kernel;
  EXPECT_NE(DeliveryRegistry::instance().find(kernel), nullptr) << kernel;
  auto e = test::run_cli({"export", "s", "--format", "env"}, dir.path());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out.find("no param of this space is applied through an environment variable"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find(f->env_prefixes[0]), std::string::npos) << e.out;
}

}  // namespace
}  // namespace acceltune
