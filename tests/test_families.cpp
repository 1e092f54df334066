// Families describe themselves (tuner/family.hpp): every shipped space has a family, every
// family's spaces ship; and echo, a family used only by tests and registered from its own folder
// (kernels/echo), reaches every point a family plugs into: bring-up's choice, a bundle file and the
// jobs that read it, a link and its ceiling, a fingerprint field, a unit in results and compare, an
// export, a far end and a delivery client.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "kernels/shared/peer.hpp"
#include "probe/fingerprint.hpp"
#include "probe/links.hpp"
#include "tests/helpers.hpp"
#include "tools/bringup/bundle.hpp"
#include "tools/bringup/families.hpp"
#include "results/study_dir.hpp"
#include "tuner/family.hpp"
#include "tuner/kernel.hpp"
#include "tuner/plan.hpp"
#include "tuner/verify.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using test::run_cli;

TEST(Families, EveryShippedSpaceHasAFamilyAndEveryFamilyShipsItsSpaces) {
  int spaces = 0;
  for (const auto& e : fs::directory_iterator(test::spaces_dir())) {
    if (e.path().extension() != ".json") continue;
    const Json j = Json::parse(test::read_file(e.path()));
    const std::string kernel = j.value("kernel", "");
    const FamilyInfo* f = family_of_kernel(kernel);
    ASSERT_NE(f, nullptr) << e.path().filename() << ": kernel '" << kernel << "' belongs to no family";
    const std::string name = e.path().stem().string();
    EXPECT_NE(std::find(f->spaces.begin(), f->spaces.end(), name), f->spaces.end())
        << name << " is shipped but its family does not list it";
    ++spaces;
  }
  EXPECT_GE(spaces, 20);
  for (const auto& [name, f] : families_in_order()) {
    for (const auto& s : f->spaces) EXPECT_TRUE(fs::exists(test::spaces_dir() / (s + ".json"))) << name << ": " << s;
  }
  // Every kernel this build registers is a family's.
  for (const auto& [kernel, info] : KernelRegistry::instance().entries()) {
    if (info.listed) {
      EXPECT_FALSE(family_name_of_kernel(kernel).empty()) << kernel;
    }
  }
}

TEST(Families, ATestFamilyFromItsOwnFolderReachesEveryPoint) {
#if !ACCELTUNE_TEST_SEAMS
  GTEST_SKIP() << "the test family is built only with ACCELTUNE_TEST_SEAMS";
#endif
  const FamilyInfo* echo = FamilyRegistry::instance().find("echo");
  ASSERT_NE(echo, nullptr) << "kernels/echo registers no family";

  // Bring-up's choice: hidden unless --only names it.
  bringup::NodeFacts node;
  const auto& listed = bringup::family_names();
  EXPECT_EQ(std::find(listed.begin(), listed.end(), "echo"), listed.end());
  auto all = bringup::pick_families(node, {}, {});
  ASSERT_TRUE(all);
  for (const auto& f : *all) EXPECT_NE(f.name, "echo");
  auto only = bringup::pick_families(node, {"echo"}, {});
  ASSERT_TRUE(only) << only.error().message;
  const auto studies = bringup::studies_to_run(*only);
  ASSERT_EQ(studies.size(), 1u);
  EXPECT_EQ(studies[0].space, "echo");

  // A whole bring-up of it: the search, the bundle file, the delivered figures through its client.
  test::TempDir dir;
  const fs::path bundle = dir / "bundle";
  auto r = run_cli({"bringup", "--only", "echo", "--time-limit", "6s", "--out", bundle.string()}, {},
                   "ACCELTUNE_TEST_ECHO_PROBE=40");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string env = test::read_file(bundle / "echo.env");
  EXPECT_NE(env.find("ACCELTUNE_ECHO_CHUNK="), std::string::npos) << env;  // 16-byte copies lose to any larger chunk
  EXPECT_NE(test::read_file(bundle / "acceltune.env").find("ACCELTUNE_ECHO_CHUNK="), std::string::npos);
  const Json summary = Json::parse(test::read_file(bundle / "bringup.json"));
  Json study;
  for (const auto& f : summary["families"]) {
    if (f["name"] == "echo") study = f["studies"].at(0);
  }
  ASSERT_TRUE(study.is_object()) << summary["families"].dump();
  EXPECT_EQ(study["state"], "done");
  EXPECT_EQ(study["efficiency"]["link_id"], "echo-wire");                // its link rule
  EXPECT_EQ(study["bundle"]["state"], "measured") << study["bundle"].dump();  // the bundle read by its client
  EXPECT_EQ(summary["fingerprint"]["fingerprint_fields"]["echo"]["wire_gbps"], 40);  // its fingerprint field
  bool ceiling = false;
  for (const auto& l : summary["links"]) ceiling = ceiling || (l["id"] == "echo-wire" && l["gbps"] == 40);
  EXPECT_TRUE(ceiling) << summary["links"].dump();

  // The unit in results and compare, and its own export, for its studies only.
  const std::string study_dir = (bundle / study["dir"].get<std::string>()).string();
  const Json best = Json::parse(test::read_file(fs::path(study_dir) / "best.json"));
  EXPECT_EQ(best["unit"], "MB/s");
  auto cmp = run_cli({"compare", study_dir, study_dir});
  EXPECT_NE(cmp.out.find("MB/s"), std::string::npos) << cmp.out << cmp.err;
  auto ex = run_cli({"export", study_dir, "--format", "echo-env"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  EXPECT_NE(ex.out.find("ACCELTUNE_ECHO_CHUNK="), std::string::npos) << ex.out;
  EXPECT_TRUE(format_applies("echo-env", "echo"));
  EXPECT_FALSE(format_applies("echo-env", "host-copy"));

  // Its far end, through the control server.
  auto server = PeerServer::start("127.0.0.1", 0, Json{{"insecure", true}});
  ASSERT_TRUE(server) << server.error().message;
  auto ch = connect_peer("127.0.0.1", (*server)->port(), std::nullopt, Json{{"kind", "echo"}, {"n", 7}}, 10);
  ASSERT_TRUE(ch) << ch.error().message;
  auto reply = ch->recv(10);
  ch->close();
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ((*reply)["echoed"], true);
  EXPECT_EQ((*reply)["n"], 7);
  for (const auto& h : echo->far_ends) EXPECT_NE(PeerHandlerRegistry::instance().find(h), nullptr) << h;
}

// A finished echo study in `study`: searched, neither certified nor verified.
void search_echo(const fs::path& study) {
  auto r = run_cli({"search", "--space", "echo", "--out", study.string(), "--certify-top", "0", "--verify-rounds", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

// The stages after the plan (tuner/verify.hpp's verify_and_fall_back), through echo's plain client
// with plans of known direction: 1-byte copies are slower than the library's 16, 64K ones faster.
// A slower plan is measured slower and falls back to the defaults; a faster one is measured
// faster and pays. Swapping the arms of the comparison fails both halves.
TEST(Families, TheStagesAfterThePlanTellFasterFromSlowerAndFallBack) {
#if !ACCELTUNE_TEST_SEAMS
  GTEST_SKIP() << "the test family is built only with ACCELTUNE_TEST_SEAMS";
#endif
  test::TempDir dir;
  const fs::path study = dir / "study";
  ASSERT_NO_FATAL_FAILURE(search_echo(study));
  const auto with_chunk = [&](int64_t chunk) -> BestTable {
    auto s = load_study_dir(study.string(), StudyParts::best);
    EXPECT_TRUE(s) << s.error().message;
    if (!s) return {};
    BestTable b = s->best;
    b.plan.job = Json{{"chunk", chunk}};
    b.plan.job_is_default = false;
    for (auto& z : b.sizes) {
      z.chosen_config = with_job(b.default_config, b.plan.job);
      z.chosen_is_default = false;
    }
    finish_ranges(b);  // the ranges and the export config follow the plan
    return b;
  };

  BestTable slower = with_chunk(1);
  DeliverOptions o;
  o.verify.rounds = 5;
  o.measurements = 3;
  o.fall_back = true;
  std::vector<BestTable> measured;
  o.on_measured = [&](const BestTable& b) { measured.push_back(b); };
  int fallbacks = 0;
  o.on_fallback = [&](bool again) {
    EXPECT_TRUE(again);
    ++fallbacks;
  };
  auto d = verify_and_fall_back(slower, o);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_FALSE(measured.empty());
  EXPECT_EQ(measured[0].delivery.verdict, "worse") << measured[0].delivery.verdict_why;
  for (const auto& z : measured[0].sizes) {
    ASSERT_TRUE(z.delivered) << z.bytes;
    EXPECT_TRUE(z.delivered->slower) << z.bytes << ": " << z.delivered->ratio << " [" << z.delivered->ci_low << ", "
                                     << z.delivered->ci_high << "]";
    EXPECT_FALSE(z.delivered->faster) << z.bytes;
  }
  EXPECT_EQ(d->fallbacks, 1);
  EXPECT_EQ(fallbacks, 1);
  EXPECT_TRUE(slower.plan.job_is_default);
  ASSERT_FALSE(slower.plan.notes.empty());
  EXPECT_NE(slower.plan.notes[0].find("falls back to the library defaults"), std::string::npos) << slower.plan.notes[0];
  // Fallen back, the plan loads nothing: the second measurement has nothing to compare.
  EXPECT_EQ(d->measurements, 2);
  EXPECT_EQ(d->verdict, PlanVerdict::not_verified);
  EXPECT_NE(d->why.find("defaults"), std::string::npos) << d->why;
  // What best.json keeps is the last measurement's plan.
  auto kept = load_study_dir(study.string(), StudyParts::best);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_TRUE(kept->best.plan.job_is_default);

  // A plan whose job fails at one size (echo's library refuses a chunk larger than the message):
  // never exported, whatever it does elsewhere.
  BestTable breaks = with_chunk(int64_t{1} << 17);
  o.measurements = 3;
  d = verify_and_fall_back(breaks, o);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->verdict, PlanVerdict::job_failed);
  EXPECT_EQ(d->measurements, 1);
  EXPECT_NE(d->why.find("at 64K"), std::string::npos) << d->why;
  EXPECT_NE(d->why.find("ACCELTUNE_ECHO_CHUNK=131072"), std::string::npos) << d->why;
  EXPECT_EQ(breaks.delivery.verdict, "fails");
  EXPECT_TRUE(breaks.plan.job_is_default);
  kept = load_study_dir(study.string(), StudyParts::best);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_TRUE(kept->best.plan.job_is_default);
  EXPECT_EQ(kept->best.delivery.verdict, "fails");

  BestTable faster = with_chunk(65536);
  o.measurements = 1;
  o.fall_back = false;
  measured.clear();
  d = verify_and_fall_back(faster, o);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->verdict, PlanVerdict::pays);
  EXPECT_EQ(faster.delivery.verdict, "ships") << faster.delivery.verdict_why;
  EXPECT_EQ(d->measurements, 1);
  for (const auto& z : faster.sizes) {
    ASSERT_TRUE(z.delivered) << z.bytes;
    EXPECT_TRUE(z.delivered->faster) << z.bytes << ": " << z.delivered->ratio << " [" << z.delivered->ci_low << ", "
                                     << z.delivered->ci_high << "]";
  }
}

// The bundle merge through echo's client, with values of known direction: a line that makes its
// study slower under the merged bundle is written commented out with the figure; a faster one stays.
TEST(Families, TheBundleLeavesOutWhatMakesItsStudySlower) {
#if !ACCELTUNE_TEST_SEAMS
  GTEST_SKIP() << "the test family is built only with ACCELTUNE_TEST_SEAMS";
#endif
  test::TempDir dir;
  const fs::path study = dir / "study";
  ASSERT_NO_FATAL_FAILURE(search_echo(study));
  auto data = load_study_dir(study.string());
  ASSERT_TRUE(data) << data.error().message;
  // 1-byte copies are slower than the library's 16; 64K ones faster; 128K ones fail at 64K.
  for (const auto& [chunk, kept] : {std::pair<std::string, bool>{"1", false}, {"65536", true}, {"131072", false}}) {
    bringup::Contribution c;
    c.study = &*data;
    c.vars = {{"ACCELTUNE_ECHO_CHUNK", chunk}};
    c.gain = "certified";
    bringup::MergeOptions mo;
    mo.rounds = 4;
    const bringup::Bundle b = bringup::merge_and_verify({c}, mo);
    ASSERT_EQ(b.env.size(), 1u);
    ASSERT_EQ(b.delivered.size(), 1u);
    const bool fails = chunk == "131072";
    // The last measurement: the bundle without the line that failed the study, when one was removed.
    EXPECT_EQ(b.delivered[0].state, "measured") << chunk << ": " << b.delivered[0].why << "\n" << join(b.notes, "\n");
    EXPECT_FALSE(b.delivered[0].failed) << b.delivered[0].why;
    EXPECT_EQ(b.env[0].left_out, !kept) << chunk << ": " << b.env[0].why;
    if (!kept) {
      EXPECT_NE(b.env[0].why.find(fails ? "job failed under the merged bundle: no run measured 64K"
                                        : "under the merged bundle is"),
                std::string::npos)
          << b.env[0].why;
      // Measured again without its line: nothing left for its job, so the figure that removed it stays.
      EXPECT_NE(join(b.notes, "\n").find("measured again (pass 2 of at most 3)"), std::string::npos) << join(b.notes, "\n");
    }
    const std::string text = bringup::env_file_text(b, "");
    EXPECT_NE(text.find(std::string(kept ? "" : "# ") + "ACCELTUNE_ECHO_CHUNK=" + chunk), std::string::npos) << text;
  }
}

// The last resort of the bundle's passes: a study its bundle still fails with no line of its own
// left takes nothing from the bundle. Two echo studies read one variable: the 1M study's 128K
// chunk pays there and fails the other study's 64K job, so the line goes although its own study
// passes with it.
TEST(Families, AStudyStillFailedWithNoLineOfItsOwnTakesNothingFromTheBundle) {
#if !ACCELTUNE_TEST_SEAMS
  GTEST_SKIP() << "the test family is built only with ACCELTUNE_TEST_SEAMS";
#endif
  test::TempDir dir;
  std::vector<StudyData> data;
  for (const auto& [name, size] : {std::pair<std::string, std::string>{"echo-large", "1M"}, {"echo-small", "64K"}}) {
    test::write_file(dir / (name + ".json"),
                     R"({"name": ")" + name + R"(", "kernel": "echo", "sizes": [")" + size + R"("], "params": [
                       {"name": "chunk", "kind": "ordinal", "values": [16, 4096], "default": 16,
                        "env": "ACCELTUNE_ECHO_CHUNK"}], "search": {"strategy": "grid", "budget": 2}})");
    auto r = run_cli({"search", "--space", (dir / (name + ".json")).string(), "--out", (dir / name).string(),
                      "--certify-top", "0", "--verify-rounds", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    auto d = load_study_dir((dir / name).string());
    ASSERT_TRUE(d) << d.error().message;
    data.push_back(std::move(d).value());
  }
  bringup::Contribution large, small;
  large.study = &data[0];
  large.vars = {{"ACCELTUNE_ECHO_CHUNK", "131072"}};
  small.study = &data[1];
  bringup::MergeOptions mo;
  mo.rounds = 3;
  const bringup::Bundle b = bringup::merge_and_verify({large, small}, mo);
  ASSERT_EQ(b.env.size(), 1u);
  EXPECT_TRUE(b.env[0].left_out) << b.env[0].why;
  EXPECT_NE(b.env[0].why.find("echo-small's job failed under the merged bundle"), std::string::npos) << b.env[0].why;
  EXPECT_NE(b.env[0].why.find("its family takes nothing from it"), std::string::npos) << b.env[0].why;
}

// UCX's shared-memory and network paths read one environment: a threshold from the shared-memory
// study ships only when the network study was measured under the bundle too.
TEST(Families, ALineThatGovernsAnUnmeasuredPathIsLeftOut) {
  const auto bundle_of = [](const std::string& var) {
    bringup::Bundle b;
    bringup::EnvLine l;
    l.var = var;
    l.value = "inf";
    l.from = {var == "ACCELTUNE_ECHO_CHUNK" ? "echo" : "ucx-shm"};
    b.env.push_back(l);
    return b;
  };
  const std::map<std::string, std::string> family_of = {{"ucx-shm", "ucx"}, {"ucx-tcp", "ucx"}, {"echo", "echo"}};
  bringup::Bundle one = bundle_of("UCX_ZCOPY_THRESH");
  bringup::leave_out_unmeasured_paths(one, family_of, {"ucx-shm"});
  EXPECT_TRUE(one.env[0].left_out);
  EXPECT_NE(one.env[0].why.find("governs ucx-tcp's path too"), std::string::npos) << one.env[0].why;
  ASSERT_EQ(one.notes.size(), 1u);
  bringup::Bundle both = bundle_of("UCX_ZCOPY_THRESH");
  bringup::leave_out_unmeasured_paths(both, family_of, {"ucx-shm", "ucx-tcp"});
  EXPECT_FALSE(both.env[0].left_out) << both.env[0].why;
  bringup::Bundle other = bundle_of("ACCELTUNE_ECHO_CHUNK");  // a family whose spaces do not share paths
  bringup::leave_out_unmeasured_paths(other, family_of, {});
  EXPECT_FALSE(other.env[0].left_out) << other.env[0].why;
}

}  // namespace
}  // namespace acceltune
