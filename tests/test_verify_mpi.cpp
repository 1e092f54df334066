// acceltune verify through mpirun (label slow): a 4-rank search whose plan the plain MPI client
// loads, and what a missing launcher says. The quick verify tests are in test_verify.cpp.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/helpers.hpp"
#include "tuner/best.hpp"
#include "tuner/verify.hpp"

namespace acceltune {
namespace {

// A 4-rank allreduce, oversubscribed on small machines: the plan the search certifies, loaded by
// the project's plain MPI client under mpirun with the env export and its rules file, is no
// slower than Open MPI's defaults at any size, and its delivered figures are in best.json.
TEST(VerifyMpi, TheFourRankPlanDeliversNoSlowerThanTheDefaults) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  test::TempDir dir;
  Json space = Json::parse(test::read_file(test::spaces_dir() / "mpi-allreduce.json"));
  space["name"] = "mpi-allreduce-4";
  space["ranks"] = 4;
  test::write_file(dir / "mpi4.json", space.dump());
  auto s = test::run_cli({"search", "--space", "mpi4.json", "--sizes", "32K,1M", "--strategy", "grid", "--budget", "20",
                          "--certify-top", "2", "--certify-rounds", "4", "--verify-rounds", "4", "--out", "s"},
                         dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  EXPECT_NE(s.out.find("delivered through: a plain MPI"), std::string::npos) << s.out;
  const Json best = Json::parse(test::read_file(dir / "s" / "best.json"));
  bool plan_is_defaults = best["plan"]["job_is_default"].get<bool>();
  for (const auto& z : best["sizes"]) plan_is_defaults = plan_is_defaults && z["chosen_is_default"].get<bool>();
  if (best["delivery"]["state"] != "measured" || plan_is_defaults) {
    // On a loaded machine the plan may have nothing that pays: then it must be the library's
    // defaults everywhere (no certified gain, or the fallback of a plan whose delivered verdict
    // did not ship it), so a job loads nothing, the exports force nothing, and the study says why.
    if (best["delivery"]["state"] != "measured") {
      EXPECT_EQ(best["delivery"]["why"], "the plan is the library's defaults: a job loads nothing from it")
          << best["delivery"];
    }
    EXPECT_TRUE(plan_is_defaults) << best["plan"] << best["sizes"];
    bool fell_back = false;
    for (const auto& n : best["plan"]["notes"]) fell_back |= n.get<std::string>().find("falls back") != std::string::npos;
    bool certified_gain = false;
    for (const auto& z : best["sizes"]) {
      const Json c = z.value("certified", Json::object());
      // Trial 0 is the default config: its own figure against itself is no gain.
      certified_gain |= c.is_object() && c.value("significant", false) && c.value("trial", Json(0)) != Json(0);
    }
    EXPECT_TRUE(fell_back || !certified_gain) << "a certified gain was dropped without a delivered reason\n"
                                              << best.dump() << "\n" << s.out;
    auto env = test::run_cli({"export", "s", "--format", "env"}, dir.path());
    ASSERT_EQ(env.exit_code, 0) << env.err;
    EXPECT_EQ(env.out.find("OMPI_MCA_pml="), std::string::npos) << env.out;
    EXPECT_EQ(env.out.find("OMPI_MCA_coll_tuned_allreduce_algorithm="), std::string::npos) << env.out;
    // verify has nothing to load, and says so.
    auto v = test::run_cli({"verify", "s", "--rounds", "2"}, dir.path());
    EXPECT_EQ(v.exit_code, 4) << v.out << v.err;  // not verified
    EXPECT_NE(v.out.find("the plan is the library's defaults"), std::string::npos) << v.out;
    return;
  }
  for (const auto& z : best["sizes"]) {
    ASSERT_TRUE(z["delivered"].is_object()) << z.dump();
    EXPECT_GE(z["delivered"]["rounds"].get<int>(), 2) << z["delivered"];
    EXPECT_FALSE(z["delivered"]["slower"].get<bool>()) << z["size"] << ": " << z["delivered"] << "\n" << s.out;
  }
  // Job-wide params are one value in every range, and the env export forces no algorithm.
  for (const auto& r : best["ranges"]) EXPECT_EQ(r["config"]["pml"], best["plan"]["job"]["pml"]) << best["ranges"];
  auto env = test::run_cli({"export", "s", "--format", "env"}, dir.path());
  ASSERT_EQ(env.exit_code, 0) << env.err;
  EXPECT_EQ(env.out.find("OMPI_MCA_coll_tuned_allreduce_algorithm="), std::string::npos) << env.out;
  EXPECT_EQ(env.out.find("UCX_HANDLE_ERRORS"), std::string::npos) << env.out;
  // verify on the stored study measures again and says whether it pays.
  auto v = test::run_cli({"verify", "s", "--rounds", "3"}, dir.path());
  EXPECT_TRUE(v.exit_code == 0 || v.exit_code == 3) << v.out << v.err;
  EXPECT_NE(v.out.find("delivered [95%]"), std::string::npos) << v.out;
}

TEST(VerifyMpi, AMissingLauncherNamesItsPackage) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  test::TempDir dir;
  auto s = test::run_cli({"search", "--space", "mpi-allreduce", "--sizes", "4K", "--strategy", "grid", "--budget", "3",
                          "--certify-top", "0", "--verify-rounds", "0", "--out", "s"},
                         dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto v = test::run_cli({"verify", "s"}, dir.path(), "env -u ACCELTUNE_MPIRUN PATH=/nonexistent");
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.err.find("openmpi-bin"), std::string::npos) << v.err;
}

}  // namespace
}  // namespace acceltune
