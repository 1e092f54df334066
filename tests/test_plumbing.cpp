// The core's plumbing: whole-file writes, scoped environment variables, durations.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/helpers.hpp"
#include "tuner/atomic_file.hpp"
#include "tuner/duration.hpp"
#include "tuner/scoped_env.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(AtomicFile, ReplacesTheTargetWholeAndLeavesNoTemporary) {
  TempDir t;
  const fs::path target = t / "best.json";
  ASSERT_TRUE(write_file_atomically(target, std::string(100000, 'a')));
  EXPECT_EQ(test::read_file(target), std::string(100000, 'a'));
  // A shorter content replaces the longer file; it is not written over its start.
  ASSERT_TRUE(write_file_atomically(target, "short\n"));
  EXPECT_EQ(test::read_file(target), "short\n");
  ASSERT_TRUE(write_file_atomically(target, ""));
  EXPECT_EQ(test::read_file(target), "");
  EXPECT_EQ(names_in(t.path()), std::vector<std::string>{"best.json"});
}

TEST(AtomicFile, ModesFollowTheUmask) {
  TempDir t;
  const mode_t old = ::umask(022);
  ASSERT_TRUE(write_file_atomically(t / "a.env", "A=1\n"));
  ASSERT_TRUE(write_file_atomically(t / "job.sh", "#!/bin/sh\n", {.executable = true}));
  ::umask(old);
  EXPECT_EQ(fs::status(t / "a.env").permissions(), fs::perms(0644));
  EXPECT_EQ(fs::status(t / "job.sh").permissions(), fs::perms(0755));
}

TEST(AtomicFile, AnUnwritablePlaceIsAnInputErrorNamingThePath) {
  TempDir t;
  const fs::path missing = t / "no-dir" / "r.html";
  Status st = write_file_atomically(missing, "x", {.what = "the page"});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::input);
  EXPECT_EQ(st.error().message.rfind(missing.string() + ": cannot write the page: ", 0), 0u) << st.error().message;
  // A file where the folder should be, and a directory in the place of the target (root may write
  // anywhere, so permissions would not show it).
  test::write_file(t / "file", "x");
  st = write_file_atomically(t / "file" / "r.html", "x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::input);
  EXPECT_NE(st.error().message.find((t / "file" / "r.html").string() + ": cannot write: "), std::string::npos);
  fs::create_directory(t / "taken");
  test::write_file(t / "taken" / "inside", "kept");
  st = write_file_atomically(t / "taken", "x");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find((t / "taken").string()), std::string::npos) << st.error().message;
  EXPECT_EQ(test::read_file(t / "taken" / "inside"), "kept");
  EXPECT_EQ(names_in(t.path()), (std::vector<std::string>{"file", "taken"}));  // no temporary left
}

TEST(AtomicFile, ConcurrentWritersLeaveOneWholeVersion) {
  TempDir t;
  const fs::path target = t / "plan.env";
  std::vector<std::thread> writers;
  for (char c : {'a', 'b', 'c', 'd'}) {
    writers.emplace_back([&target, c] {
      for (int i = 0; i < 20; ++i) ASSERT_TRUE(write_file_atomically(target, std::string(4096, c)));
    });
  }
  for (auto& w : writers) w.join();
  const std::string text = test::read_file(target);
  ASSERT_EQ(text.size(), 4096u);
  EXPECT_EQ(text, std::string(4096, text[0]));
  EXPECT_EQ(names_in(t.path()), std::vector<std::string>{"plan.env"});
}

TEST(ScopedEnv, PutsBackWhatWasThere) {
  ::setenv("ACCELTUNE_TEST_KEPT", "user", 1);
  ::unsetenv("ACCELTUNE_TEST_NEW");
  {
    ScopedEnv one("ACCELTUNE_TEST_KEPT", std::nullopt);
    EXPECT_EQ(std::getenv("ACCELTUNE_TEST_KEPT"), nullptr);
    ScopedEnv env;
    env.set("ACCELTUNE_TEST_KEPT", "a");
    env.set("ACCELTUNE_TEST_KEPT", "b");  // twice: the first value comes back, not "a"
    env.set("ACCELTUNE_TEST_NEW", "c");
    EXPECT_STREQ(std::getenv("ACCELTUNE_TEST_KEPT"), "b");
    EXPECT_STREQ(std::getenv("ACCELTUNE_TEST_NEW"), "c");
  }
  EXPECT_STREQ(std::getenv("ACCELTUNE_TEST_KEPT"), "user");
  EXPECT_EQ(std::getenv("ACCELTUNE_TEST_NEW"), nullptr);
  ::unsetenv("ACCELTUNE_TEST_KEPT");
}

TEST(Duration, TakesUnits) {
  EXPECT_EQ(parse_duration("2m"), 120);
  EXPECT_EQ(parse_duration("90s"), 90);
  EXPECT_EQ(parse_duration("1h"), 3600);
  EXPECT_EQ(parse_duration("1m30s"), 90);
  EXPECT_EQ(parse_duration("45"), 45);
  EXPECT_EQ(parse_duration("1.5m"), 90);
  EXPECT_EQ(parse_duration("0.05"), 0.05);
  EXPECT_EQ(parse_duration("1h2m3s"), 3723);
  for (const char* bad : {"", "abc", "2x", "5x", "-1m", "0", "0s", "1m30", "m", "nan", "inf", "1ms", "2 m"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
}

TEST(Duration, ZeroOnlyWhereItMeansOff) {
  EXPECT_EQ(parse_duration("0", true), 0);
  EXPECT_EQ(parse_duration("0s", true), 0);
  EXPECT_EQ(parse_duration("2m", true), 120);
  for (const char* bad : {"", "-1", "x", "0x"}) EXPECT_FALSE(parse_duration(bad, true)) << bad;
}

}  // namespace
}  // namespace acceltune
