// Process isolation: a config that crashes, hangs, exits or returns NaN is a trial result, and
// a killed search resumes without losing or repeating a finished trial.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "tests/helpers.hpp"
#include "tuner/study.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

const char* kFaultSpace = R"({"name": "faults", "kernel": "fault", "sizes": [1],
  "params": [{"name": "mode", "kind": "categorical", "values": ["ok", "crash", "hang", "exit", "nan", "slow"],
              "default": "ok"}]})";

TEST(Runner, EveryFaultModeEndsInTheRightStateAndTheStudyGoesOn) {
  Space s = test::space_from_text(kFaultSpace);
  auto k = make_kernel(s);
  ASSERT_TRUE(k.has_value()) << k.error().message;
  test::TempDir dir;
  auto st = std::move(open_store("dir", (dir / "s").string()).value());
  Workload w;
  w.kernel = "fault";
  w.sizes = {1};
  StudyOptions o;
  o.strategy = "grid";
  o.budget = 10;
  o.worker_command = test::worker_command();
  o.trial_timeout_seconds = 2;
  auto out = run_study(s, **k, *st, w, o, Json::object());
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(out->isolation, Isolation::worker);
  ASSERT_EQ(out->trials.size(), 6u);
  std::map<std::string, const Trial*> by_mode;
  for (const auto& t : out->trials) by_mode[to_string(s.value(t.config, 0))] = &t;
  EXPECT_EQ(by_mode["ok"]->state, State::ok);
  EXPECT_DOUBLE_EQ(*by_mode["ok"]->value, 1.0);
  EXPECT_EQ(by_mode["slow"]->state, State::ok);
  EXPECT_EQ(by_mode["crash"]->state, State::failed);
  EXPECT_NE(by_mode["crash"]->error.find("SIGSEGV"), std::string::npos) << by_mode["crash"]->error;
  EXPECT_NE(by_mode["crash"]->error.find("crashing on purpose"), std::string::npos) << by_mode["crash"]->error;
  EXPECT_EQ(by_mode["hang"]->state, State::timeout);
  EXPECT_NE(by_mode["hang"]->error.find("killed"), std::string::npos) << by_mode["hang"]->error;
  EXPECT_LT(by_mode["hang"]->cost_seconds, 4.0);
  EXPECT_EQ(by_mode["exit"]->state, State::failed);
  EXPECT_NE(by_mode["exit"]->error.find("status 3"), std::string::npos) << by_mode["exit"]->error;
  EXPECT_NE(by_mode["exit"]->error.find("exiting with status 3 on purpose"), std::string::npos);
  EXPECT_EQ(by_mode["nan"]->state, State::invalid);
  for (const auto& [mode, t] : by_mode) {
    if (t->state != State::ok) {
      EXPECT_FALSE(t->value.has_value()) << mode;
    }
  }
  // The stored file agrees, and the log has one finish or failure per trial.
  const auto lines = test::lines_of(test::read_file(dir / "s" / "trials.jsonl"));
  ASSERT_EQ(lines.size(), 6u);
  int ends = 0;
  for (const auto& l : test::lines_of(test::read_file(dir / "s" / "events.jsonl"))) {
    const std::string ev = Json::parse(l)["event"];
    ends += ev == "trial_finish" || ev == "trial_failure";
  }
  EXPECT_EQ(ends, 6);
}

TEST(Runner, IsolationFollowsKernelSpaceAndEnvironment) {
  Space fault = test::space_from_text(kFaultSpace);
  auto fk = std::move(make_kernel(fault).value());
  EXPECT_EQ(*resolve_isolation(fault, *fk, Isolation::automatic), Isolation::worker);
  auto forced = resolve_isolation(fault, *fk, Isolation::in_process);
  ASSERT_FALSE(forced.has_value());
  EXPECT_EQ(forced.error().exit_code(), 2);

  Space copy = test::space_from_text(R"({"name": "c", "kernel": "host-copy", "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1}]})");
  auto ck = std::move(make_kernel(copy).value());
  EXPECT_EQ(*resolve_isolation(copy, *ck, Isolation::automatic), Isolation::in_process);
  EXPECT_EQ(*resolve_isolation(copy, *ck, Isolation::worker), Isolation::worker);

  Space env = test::space_from_text(R"({"name": "c", "kernel": "host-copy", "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1},
    {"name": "algo", "kind": "categorical", "values": ["ring"], "default": "ring", "env": "NCCL_ALGO"}]})");
  auto ek = std::move(make_kernel(env).value());
  EXPECT_EQ(*resolve_isolation(env, *ek, Isolation::automatic), Isolation::worker);

  Space forced_space = test::space_from_text(R"({"name": "c", "kernel": "host-copy", "isolation": "worker", "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1}]})");
  EXPECT_EQ(*resolve_isolation(forced_space, *ck, Isolation::automatic), Isolation::worker);
}

TEST(Runner, HostCopyMeasuresInAWorkerToo) {
  Space s = test::space_from_text(R"({"name": "c", "kernel": "host-copy", "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1}]})");
  auto k = std::move(make_kernel(s).value());
  RunnerOptions ro;
  ro.isolation = Isolation::worker;
  ro.worker_command = test::worker_command();
  ro.measure.max_seconds = 0.02;
  TrialRunner runner(s, *k, ro);
  Trial t = runner.run(s.default_config(), 0, {65536, 1 << 20});
  ASSERT_EQ(t.state, State::ok) << t.error;
  ASSERT_EQ(t.measurements.size(), 2u);
  EXPECT_GT(t.measurements[1].value, 0);
  EXPECT_GE(t.measurements[1].samples_seconds.size(), 2u);
}

size_t count_lines(const fs::path& p) { return test::lines_of(test::read_file(p)).size(); }

bool wait_for_lines(const fs::path& p, size_t n, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(p) && count_lines(p) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

const char* kSlowSpace = R"({"name": "slow", "kernel": "fault", "sizes": [1],
  "params": [{"name": "mode", "kind": "categorical", "values": ["slow"], "default": "slow"},
             {"name": "value", "kind": "int", "min": 1, "max": 24, "default": 1},
             {"name": "slow_seconds", "kind": "ordinal", "values": [0.05], "default": 0.05}]})";

TEST(Runner, KilledSearchResumesWithoutLosingOrRepeatingTrials) {
  test::TempDir dir;
  test::write_file(dir / "slow.json", kSlowSpace);
  const std::vector<std::string> args = {"search", "--space", "slow.json", "--strategy", "random", "--budget", "24",
                                         "--seed", "9", "--certify-top", "0", "--out", "s"};
  const fs::path trials = dir / "s" / "trials.jsonl";
  pid_t pid = test::spawn_cli(args, dir.path());
  ASSERT_TRUE(wait_for_lines(trials, 7, 30)) << "the search did not get going";
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::string before = test::read_file(trials);
  const auto kept = test::lines_of(before);
  for (const auto& l : kept) ASSERT_FALSE(Json::parse(l, nullptr, false).is_discarded()) << l;
  ASSERT_LT(kept.size(), 24u) << "killed too late to prove anything";

  auto r = test::run_cli({"search", "--space", "slow.json", "--budget", "24", "--out", "s", "--resume",
                          "--certify-top", "0"},
                         dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto after = test::lines_of(test::read_file(trials));
  ASSERT_EQ(after.size(), 24u);
  std::set<int64_t> numbers;
  std::set<std::string> keys;
  for (size_t i = 0; i < after.size(); ++i) {
    Json j = Json::parse(after[i]);
    numbers.insert(j["number"].get<int64_t>());
    keys.insert(j["key"].get<std::string>());
    if (i < kept.size()) {
      EXPECT_EQ(after[i], kept[i]) << "finished trial " << i << " changed";
    }
  }
  EXPECT_EQ(numbers.size(), 24u);
  EXPECT_EQ(*numbers.rbegin(), 23);
  EXPECT_EQ(keys.size(), 24u);  // every config once: nothing repeated
  // The resumed random order is the uninterrupted one (the strategy's state was restored).
  auto whole = test::run_cli({"search", "--space", "slow.json", "--strategy", "random", "--budget", "24", "--seed",
                              "9", "--certify-top", "0", "--out", "w"},
                             dir.path());
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const auto ref = test::lines_of(test::read_file(dir / "w" / "trials.jsonl"));
  ASSERT_EQ(ref.size(), 24u);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(Json::parse(ref[i])["key"], Json::parse(after[i])["key"]) << i;
  std::printf("killed after %zu finished trials; resumed: %s", kept.size(), r.out.c_str());
}

const char* kHangSpace = R"({"name": "hang", "kernel": "fault", "sizes": [1], "isolation": "worker",
  "params": [{"name": "mode", "kind": "categorical", "values": ["hang"], "default": "hang"}]})";

// A search killed with SIGKILL while its trial's worker hangs: the process guard's guardian
// clears the worker (in a process group of its own, so nothing else would).
TEST(Runner, AKilledSearchLeavesNoProcessOfItsTrial) {
  test::TempDir dir;
  test::write_file(dir / "hang.json", kHangSpace);
  const std::string mark = test::fresh_mark();
  fs::create_directories(dir / "tmp");
  const std::string tmpdir = "TMPDIR=" + (dir / "tmp").string();
  const pid_t pid = test::spawn_cli({"search", "--space", "hang.json", "--budget", "1", "--trial-timeout", "300",
                                     "--certify-top", "0", "--out", "s"},
                                    dir.path(), {mark + "=1", tmpdir});
  ASSERT_TRUE(test::wait_for_marked(mark, "__worker", 30)) << "the trial's worker did not start";
  EXPECT_NE(test::files_left(dir / "tmp", 0), "") << "the search made no scratch folder";
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_EQ(test::wait_exit(pid, 10), 128 + SIGKILL);
  EXPECT_EQ(test::left_over(mark, 5), "") << "processes of the killed search's trial are still running";
  EXPECT_EQ(test::files_left(dir / "tmp", 5), "") << "the killed search's scratch folder is still there";
}

// SIGINT or SIGTERM stops a search at once: the trial in flight is killed and dropped, finished
// trials are kept, the exit code is 128 + the signal, and --resume continues where it stopped.
TEST(Runner, ASignalStopsTheSearchKeepsItsTrialsAndResumes) {
  test::TempDir dir;
  test::write_file(dir / "slow.json", kSlowSpace);
  test::write_file(dir / "hang.json", kHangSpace);
  const fs::path trials = dir / "s" / "trials.jsonl";
  const std::string mark = test::fresh_mark();
  const pid_t pid = test::spawn_cli({"search", "--space", "slow.json", "--strategy", "random", "--budget", "24",
                                     "--seed", "3", "--certify-top", "0", "--out", "s"},
                                    dir.path(), {mark + "=1"}, dir / "log");
  ASSERT_TRUE(wait_for_lines(trials, 3, 30)) << "the search did not get going";
  ASSERT_EQ(kill(pid, SIGINT), 0);
  EXPECT_EQ(test::wait_exit(pid, 10), 128 + SIGINT) << test::read_file(dir / "log");
  EXPECT_NE(test::read_file(dir / "log").find("cancelled by SIGINT"), std::string::npos) << test::read_file(dir / "log");
  EXPECT_EQ(test::left_over(mark, 5), "");
  const auto kept = test::lines_of(test::read_file(trials));
  ASSERT_LT(kept.size(), 24u);
  for (const auto& l : kept) EXPECT_EQ(Json::parse(l)["state"], "ok") << l;  // no cut-short trial stored
  auto r = test::run_cli({"search", "--space", "slow.json", "--budget", "24", "--out", "s", "--resume",
                          "--certify-top", "0"},
                         dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::lines_of(test::read_file(trials)).size(), 24u);

  // A hanging trial does not hold the stop up until its timeout.
  const pid_t hung = test::spawn_cli({"search", "--space", "hang.json", "--budget", "1", "--trial-timeout", "300",
                                      "--certify-top", "0", "--out", "h"},
                                     dir.path(), {mark + "=1"}, dir / "hang.log");
  ASSERT_TRUE(test::wait_for_marked(mark, "__worker", 30));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(hung, SIGTERM), 0);
  EXPECT_EQ(test::wait_exit(hung, 10), 128 + SIGTERM) << test::read_file(dir / "hang.log");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_EQ(test::left_over(mark, 5), "");
  EXPECT_EQ(test::lines_of(test::read_file(dir / "h" / "trials.jsonl")).size(), 0u);
}

TEST(Runner, ASecondWriterIsRefused) {
  test::TempDir dir;
  // Trials of half a second: the first writer must still be running when the second starts, on a
  // loaded machine too (it is killed then).
  std::string space = kSlowSpace;
  const std::string fast = "[0.05], \"default\": 0.05";
  space.replace(space.find(fast), fast.size(), "[0.5], \"default\": 0.5");
  test::write_file(dir / "slow.json", space);
  pid_t pid = test::spawn_cli({"search", "--space", "slow.json", "--budget", "24", "--certify-top", "0", "--out", "s"},
                        dir.path());
  ASSERT_TRUE(wait_for_lines(dir / "s" / "trials.jsonl", 1, 30));
  auto r = test::run_cli({"search", "--space", "slow.json", "--budget", "24", "--out", "s", "--resume"}, dir.path());
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("another acceltune process"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(pid)), std::string::npos) << r.err;
  // Once the writer is gone the lock goes with it.
  auto again = test::run_cli({"search", "--space", "slow.json", "--budget", "3", "--out", "s", "--resume",
                              "--certify-top", "0"},
                             dir.path());
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

}  // namespace
}  // namespace acceltune
