// Telemetry around trials (trials.jsonl "telemetry"), the thermal guard, and --no-telemetry.
// The guard is driven by the test seam ACCELTUNE_TEST_GPU_TEMP_FILE (tuner/telemetry.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/helpers.hpp"
#include "tests/landscape.hpp"
#include "tuner/telemetry.hpp"

namespace acceltune {
namespace {

using test::run_cli;

std::vector<Json> trials_of(const std::filesystem::path& dir) {
  std::vector<Json> out;
  for (const auto& line : test::lines_of(test::read_file(dir / "trials.jsonl"))) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

// The GPU sensor read from a file, in builds with the test hooks; tests that need it skip
// without them.
#define REQUIRE_SEAMS() \
  if (!ACCELTUNE_TEST_SEAMS) GTEST_SKIP() << "this build has no test hooks (ACCELTUNE_TEST_SEAMS=OFF)"

std::string seam(const test::TempDir& dir, const std::string& readings) {
  test::write_file(dir / "gpu-temp", readings);
  return std::string(kTestGpuTempFileEnv) + "=" + (dir / "gpu-temp").string();
}

std::vector<std::string> host_copy_search(const std::string& out) {
  return {"search", "--space", "host-copy", "--budget", "3", "--sizes", "64K,1M", "--max-seconds", "0.05",
          "--certify-top", "0", "--out", out};
}

TEST(Telemetry, RecordedPerTrial) {
  REQUIRE_SEAMS();
  if (!std::ifstream("/proc/stat")) GTEST_SKIP() << "/proc/stat is not readable here";
  test::TempDir dir;
  // A GPU read from the test seam at 50 C drawing 200 W, so energy per byte is computed.
  auto r = run_cli(host_copy_search((dir / "s").string()), {}, seam(dir, "50/200"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trials = trials_of(dir / "s");
  ASSERT_EQ(trials.size(), 3u);
  bool some_load = false;
  for (const auto& t : trials) {
    ASSERT_TRUE(t.contains("telemetry")) << t.dump();
    const Json& tel = t["telemetry"];
    EXPECT_GT(tel["seconds"].get<double>(), 0.0);
    ASSERT_TRUE(tel["cpu"].is_object());
    if (tel["cpu"]["load"].is_number()) {
      some_load = true;
      EXPECT_GE(tel["cpu"]["load"].get<double>(), 0.0);
      EXPECT_LE(tel["cpu"]["load"].get<double>(), 1.0);
    }
    if (tel["cpu"]["mhz"].is_number()) {
      EXPECT_GT(tel["cpu"]["mhz"].get<double>(), 0.0);
    }
    EXPECT_TRUE(tel["nics"].is_object());
    EXPECT_FALSE(tel["throttled"].get<bool>());
    ASSERT_EQ(tel["gpus"].size(), 1u);
    EXPECT_EQ(tel["gpus"][0]["temperature_c"].get<double>(), 50.0);
    EXPECT_EQ(tel["gpus"][0]["power_w"].get<double>(), 200.0);
    ASSERT_TRUE(tel["energy_j_per_gb"].is_number()) << tel.dump();
    EXPECT_GT(tel["energy_j_per_gb"].get<double>(), 0.0);
  }
  EXPECT_TRUE(some_load) << "no trial had a CPU load reading";
}

TEST(Telemetry, ThermalGuardWaitsAndMarks) {
  REQUIRE_SEAMS();
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  // Always 95 C above an 85 C limit: every trial waits the whole (short) cap, then is marked.
  auto r = run_cli({"search", "--space", "land.csv", "--budget", "2", "--certify-top", "0", "--thermal-limit", "85",
                    "--thermal-wait", "0.2", "--out", "s"},
                   dir.path(), seam(dir, "95"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("above the thermal limit of 85 C"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("marked throttled"), std::string::npos) << r.err;
  for (const auto& t : trials_of(dir / "s")) {
    const Json& tel = t["telemetry"];
    EXPECT_TRUE(tel["throttled"].get<bool>()) << tel.dump();
    EXPECT_GE(tel["thermal_wait_seconds"].get<double>(), 0.2);
    ASSERT_TRUE(tel["notes"].is_array());
  }
}

TEST(Telemetry, ThermalGuardGoesOnOnceCool) {
  REQUIRE_SEAMS();
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  // Hot for two readings, then cool: the first trial waits, is not marked, and the rest run at once.
  auto r = run_cli({"search", "--space", "land.csv", "--budget", "2", "--certify-top", "0", "--thermal-wait", "5",
                    "--out", "s"},
                   dir.path(), seam(dir, "95 95 60"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("goes on"), std::string::npos) << r.err;
  const auto trials = trials_of(dir / "s");
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_FALSE(trials[0]["telemetry"]["throttled"].get<bool>()) << trials[0]["telemetry"].dump();
  EXPECT_GT(trials[0]["telemetry"]["thermal_wait_seconds"].get<double>(), 0.0);
  EXPECT_FALSE(trials[1]["telemetry"].contains("thermal_wait_seconds"));
  // And with the guard off, a hot GPU is not waited for.
  auto off = run_cli({"search", "--space", "land.csv", "--budget", "1", "--certify-top", "0", "--thermal-limit", "0",
                      "--out", "off"},
                     dir.path(), seam(dir, "95"));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.err.find("thermal limit"), std::string::npos) << off.err;
  EXPECT_FALSE(trials_of(dir / "off").at(0)["telemetry"].contains("thermal_wait_seconds"));
}

TEST(Telemetry, OffRecordsNone) {
  REQUIRE_SEAMS();
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  auto r = run_cli({"search", "--space", "land.csv", "--budget", "2", "--certify-top", "0", "--no-telemetry", "--out", "s"},
                   dir.path(), seam(dir, "95"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("thermal"), std::string::npos) << r.err;
  const auto trials = trials_of(dir / "s");
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) EXPECT_FALSE(t.contains("telemetry")) << t.dump();
}

}  // namespace
}  // namespace acceltune
