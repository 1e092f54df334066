// The verdict a plan must pass to ship (tuner/verdict.hpp), and the comparison that feeds it
// (tuner/verify.hpp's compare_arms) through a scripted plain client whose outcome is known:
// faster, slower at one size, no effect, failing at one size, failing to start. Swapping the
// comparison's arms fails these tests.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "tuner/rng.hpp"
#include "tuner/value.hpp"
#include "tuner/verdict.hpp"
#include "tuner/verify.hpp"

namespace acceltune {
namespace {

const std::vector<uint64_t> kSizes = {4096, 65536, 1 << 20};

// A client whose plan arm runs `ratio` times the defaults per size (with 2% noise per run);
// a size in `fails_at` measures nothing under the plan; `no_start` fails every plan run.
class ScriptedSession final : public DeliverySession {
 public:
  ScriptedSession(std::map<uint64_t, double> ratio, std::vector<uint64_t> fails_at = {}, bool no_start = false)
      : ratio_(std::move(ratio)), fails_at_(std::move(fails_at)), no_start_(no_start) {}
  Expected<std::map<uint64_t, double>> measure(const DeliveryArm& arm, const std::vector<uint64_t>& sizes) override {
    const bool plan = arm.name == "plan";
    if (plan && no_start_) return runtime_error("the scripted job could not start");
    std::map<uint64_t, double> out;
    for (uint64_t b : sizes) {
      if (plan && std::find(fails_at_.begin(), fails_at_.end(), b) != fails_at_.end()) continue;
      const double r = plan && ratio_.count(b) ? ratio_.at(b) : 1.0;
      out[b] = 1000.0 * r * std::exp(0.02 * rng_.normal());
    }
    return out;
  }

 private:
  std::map<uint64_t, double> ratio_;
  std::vector<uint64_t> fails_at_;
  bool no_start_;
  Rng rng_{7};
};

struct Run {
  Judgement judgement;
  int rounds = 0;
  std::string failure;
};

// What verify_delivery does with a session: rounds until the verdict is decided, then the verdict.
Expected<Run> judge_session(ScriptedSession& session) {
  VerdictRule rule;
  VerifyOptions o;
  o.rounds = rule.min_rounds;
  o.max_rounds = rule.max_rounds;
  o.enough = [&](const RoundValues& v) { return judge_plan(v[1], v[0], rule, false).decided; };
  RoundValues raw;
  Run run;
  const DeliveryArm defaults{"defaults", {}, Json::object()}, plan{"plan", {{"X", "1"}}, Json::object()};
  auto m = compare_arms(session, defaults, {plan}, kSizes, o, &raw, &run.failure);
  if (!m) return m.error();
  run.judgement = judge_plan(raw[1], raw[0], rule, true);
  run.rounds = static_cast<int>(raw[0].begin()->second.size());
  return run;
}

TEST(Verdict, AFasterPlanShipsAtTheFirstDecision) {
  ScriptedSession s({{4096, 1.3}, {65536, 1.3}, {1 << 20, 1.3}});
  auto r = judge_session(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->judgement.verdict, Verdict::ships) << r->judgement.why;
  EXPECT_EQ(r->rounds, VerdictRule{}.min_rounds);
}

TEST(Verdict, APlanFasterAtOneSizeAndFlatElsewhereShips) {
  ScriptedSession s({{65536, 1.2}});
  auto r = judge_session(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->judgement.verdict, Verdict::ships) << r->judgement.why;
}

TEST(Verdict, APlanSlowerAtOneSizeIsWorseAndNamesTheSize) {
  ScriptedSession s({{4096, 1.3}, {65536, 0.85}, {1 << 20, 1.3}});
  auto r = judge_session(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->judgement.verdict, Verdict::worse) << r->judgement.why;
  EXPECT_NE(r->judgement.why.find("at 64K"), std::string::npos) << r->judgement.why;
}

TEST(Verdict, APlanWithoutEffectDoesNotShipAndUsesEveryRound) {
  ScriptedSession s({});
  auto r = judge_session(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->judgement.verdict, Verdict::ships) << r->judgement.why;
  EXPECT_EQ(r->rounds, VerdictRule{}.max_rounds);
}

TEST(Verdict, APlanThatFailsAtOneSizeFails) {
  ScriptedSession s({{4096, 1.3}, {65536, 1.3}, {1 << 20, 1.3}}, {1 << 20});
  auto r = judge_session(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->judgement.verdict, Verdict::fails) << r->judgement.why;
  EXPECT_NE(r->judgement.why.find("at 1M"), std::string::npos) << r->judgement.why;
}

TEST(Verdict, APlanWhoseJobCannotStartFailsWithTheClientsWords) {
  ScriptedSession s({{4096, 1.3}}, {}, /*no_start=*/true);
  auto r = judge_session(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->judgement.verdict, Verdict::fails) << r->judgement.why;
  EXPECT_NE(r->failure.find("could not start"), std::string::npos) << r->failure;
}

// A client whose runs take `seconds` each, with no effect: the verdict wants every round it may get.
class SlowSession final : public DeliverySession {
 public:
  explicit SlowSession(double seconds) : seconds_(seconds) {}
  Expected<std::map<uint64_t, double>> measure(const DeliveryArm&, const std::vector<uint64_t>& sizes) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
    std::map<uint64_t, double> out;
    for (uint64_t b : sizes) out[b] = 1000.0 * std::exp(0.02 * rng_.normal());
    return out;
  }

 private:
  double seconds_;
  Rng rng_{11};
};

// The time limit: no round starts after the deadline, nor one the last round's length says would
// end after it once two are done; the first always runs. Without a deadline the cap decides.
TEST(Verdict, TheTimeLimitEndsTheRoundsAndNoneStartsAfterIt) {
  const DeliveryArm defaults{"defaults", {}, Json::object()}, plan{"plan", {{"X", "1"}}, Json::object()};
  const auto rounds_with = [&](Deadline deadline) {
    SlowSession s(0.02);
    VerifyOptions o;
    o.rounds = 2;
    o.max_rounds = 12;
    o.deadline = deadline;
    RoundValues raw;
    auto m = compare_arms(s, defaults, {plan}, kSizes, o, &raw);
    EXPECT_TRUE(m) << m.error().message;
    return raw[0].begin()->second.size();
  };
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(rounds_with(std::nullopt), 12u);
  EXPECT_EQ(rounds_with(now - std::chrono::seconds(1)), 1u);  // passed already: the first round only
  // Rounds of about 40 ms against 150 ms: three or so, never one that ends past it.
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = rounds_with(t0 + std::chrono::milliseconds(150));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(n, 2u);
  EXPECT_LT(n, 12u);
  EXPECT_LT(took, 0.15 + 0.25) << n << " rounds";  // twelve rounds take 0.48 s; one past it, loaded, less
  EXPECT_FALSE(deadline_passed(std::nullopt, 1e9));
  EXPECT_TRUE(deadline_passed(std::chrono::steady_clock::now() + std::chrono::seconds(10), 11));
  EXPECT_FALSE(deadline_passed(std::chrono::steady_clock::now() + std::chrono::seconds(10), 5));
}

TEST(Verdict, JudgedOnHandMadeRounds) {
  VerdictRule rule;
  const auto rounds = [](double ratio, int n, double spread) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(ratio * (1 + spread * ((i % 2) ? 1 : -1)));
    return v;
  };
  const std::vector<double> ones(5, 1.0);
  // Clearly better at one size, flat elsewhere: ships.
  EXPECT_EQ(judge_plan({{1, rounds(1.5, 5, 0.01)}, {2, rounds(1.0, 5, 0.001)}}, {{1, ones}, {2, ones}}, rule, false).verdict,
            Verdict::ships);
  // Flat everywhere: no gain once the cap is reached, not decided before.
  const Judgement flat = judge_plan({{1, rounds(1.0, 5, 0.001)}}, {{1, ones}}, rule, false);
  EXPECT_FALSE(flat.decided);
  EXPECT_EQ(judge_plan({{1, rounds(1.0, 5, 0.001)}}, {{1, ones}}, rule, true).verdict, Verdict::no_gain);
  // Wide intervals at the cap: undecided, and it does not ship.
  const Judgement wide = judge_plan({{1, rounds(1.3, 5, 0.5)}}, {{1, ones}}, rule, true);
  EXPECT_EQ(wide.verdict, Verdict::undecided) << wide.why;
  EXPECT_TRUE(wide.decided);
  // Before the first decision nothing ships, however good it looks.
  EXPECT_NE(judge_plan({{1, rounds(2.0, 2, 0.001)}}, {{1, {1.0, 1.0}}}, rule, false).verdict, Verdict::ships);
  EXPECT_EQ(to_string(verdict_from_string("no gain")), std::string("no gain"));
}

TEST(Verdict, AnIntervalWhollyBelowOneIsNeverNoDifference) {
  EXPECT_EQ(interval_meaning(1.05, 1.30), "faster");
  EXPECT_EQ(interval_meaning(0.80, 0.95), "slower");
  EXPECT_EQ(interval_meaning(0.97, 0.98), "within the no-harm margin");  // 0.98x [0.97, 0.98]
  EXPECT_EQ(interval_meaning(0.96, 0.99), "slower");
  EXPECT_EQ(interval_meaning(0.90, 1.10), "no significant difference");
  EXPECT_EQ(interval_meaning(0.0, INFINITY), "no significant difference");
}

TEST(Verdict, ASizeWhereThePlanLoadsTheDefaultsIsNotJudged) {
  VerdictRule rule;
  const std::vector<double> ones(6, 1.0);
  const std::vector<double> faster = {1.49, 1.51, 1.50, 1.52, 1.48, 1.50};
  const std::vector<double> noise = {0.70, 1.40, 0.80, 1.30, 0.75, 1.35};  // no effect, wide
  // The noisy size keeps the plan undecided while it is judged...
  const Judgement judged = judge_plan({{1, faster}, {2, noise}}, {{1, ones}, {2, ones}}, rule, true);
  EXPECT_EQ(judged.verdict, Verdict::undecided) << judged.why;
  // ...and not once the plan is known to load the defaults there.
  rule.same_as_defaults = {2};
  const Judgement same = judge_plan({{1, faster}, {2, noise}}, {{1, ones}, {2, ones}}, rule, true);
  EXPECT_EQ(same.verdict, Verdict::ships) << same.why;
  EXPECT_NE(same.why.find("not judged where the plan loads exactly the defaults (2)"), std::string::npos) << same.why;
  // A size where the defaults are loaded cannot be the size that pays.
  rule.same_as_defaults = {1, 2};
  EXPECT_EQ(judge_plan({{1, faster}, {2, noise}}, {{1, ones}, {2, ones}}, rule, true).verdict, Verdict::no_gain);
  // A job that measures nothing there still fails.
  rule.same_as_defaults = {2};
  const std::vector<double> nothing(6, std::nan(""));
  EXPECT_EQ(judge_plan({{1, faster}, {2, nothing}}, {{1, ones}, {2, ones}}, rule, true).verdict, Verdict::fails);
}

}  // namespace
}  // namespace acceltune
