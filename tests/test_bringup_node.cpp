// One whole two-minute bring-up of this machine (label slow): every family it has, the bundle, a
// job that loads it, the report rendered.
#include <chrono>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include <regex>

#include "tests/helpers.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;

const char* kMpiRoot = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";

// The whole bring-up of this machine in two minutes of searching: every family it has, the rest
// skipped with reasons, every bundle file, a job that sees the bundle, a report that renders.
TEST(BringupNode, TwoMinutesTuneEveryFamilyOfThisNodeIntoOneBundle) {
  test::TempDir t;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = test::run_cli({"bringup", "--time-limit", "2m", "--out", "b"}, t.path());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The limit bounds the whole command, within 10%; 28 s more for the last round on a loaded machine.
  EXPECT_LE(took, 120 * 1.1 + 28) << r.out;
  const Json summary = Json::parse(test::read_file(t / "b" / "bringup.json"));
  EXPECT_FALSE(summary["partial"].get<bool>());
  std::map<std::string, Json> fam;
  for (const auto& f : summary["families"]) fam[f["name"]] = f;
  for (const char* f : {"host", "ucx", "tcp"}) {
    ASSERT_TRUE(fam[f]["skipped"].is_null()) << f << ": " << fam[f];
    for (const auto& s : fam[f]["studies"]) EXPECT_EQ(s["state"], "done") << s;
  }
  if (test::have_program("mpirun")) {
    ASSERT_TRUE(fam["mpi"]["skipped"].is_null()) << fam["mpi"];
    EXPECT_EQ(fam["mpi"]["studies"][0]["state"], "done") << fam["mpi"];
  }
  const Json probe = summary["fingerprint"];
  if (probe["gpus"].empty()) {
    for (const char* f : {"cuda", "nccl"}) {
      EXPECT_NE(fam[f]["skipped"].get<std::string>().find("no GPU"), std::string::npos);
    }
  }
  if (probe["rdma"].empty()) {
    EXPECT_NE(fam["rdma"]["skipped"].get<std::string>().find("no RDMA"), std::string::npos);
  }
  for (const char* f : {"acceltune.env", "ucx.env", "ompi-rules.conf", "nccl-tuner.conf", "tcp-settings.sh", "job.sh",
                        "report.html", "studies/host-copy/best.json", "studies/ucx-shm/best.json",
                        "studies/ucx-tcp/best.json", "studies/tcp-stream/best.json", "logs/host-copy.log"}) {
    EXPECT_TRUE(fs::exists(t / "b" / f)) << f;
  }
  EXPECT_NE(r.out.find("delivered (bundle)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rdma   skipped:"), std::string::npos) << r.out;
  // host-copy is a check of the memory path: its gain, which no job loads, is advice apart.
  EXPECT_NE(r.out.find("host-copy       "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a check of its path, not a gain a job loads"), std::string::npos) << r.out;
  const size_t advice = r.out.find("\nadvice (no job loads these");
  ASSERT_NE(advice, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  host-copy: no library reads", advice), std::string::npos) << r.out;
  // The advised config's figure is that size's own: "best at 64M: {...}; certified 1.36x [...]"
  // names no other size.
  std::smatch best_at;
  const std::string after = r.out.substr(advice);
  ASSERT_TRUE(std::regex_search(after, best_at, std::regex(R"(best at (\S+): \{[^\n]*\}; ([^\n]*))"))) << after;
  EXPECT_TRUE(best_at[2].str().rfind("certified ", 0) == 0 || best_at[2].str().find("observed in the search") !=
                                                                  std::string::npos)
      << best_at[0];
  EXPECT_EQ(best_at[2].str().find(" at "), std::string::npos) << best_at[0];
  // Each study against its link's ceiling: host-copy judged against the measured memory
  // reference (or told why not), the loopback and veth paths told they have no ceiling.
  EXPECT_NE(r.out.find("against each link's ceiling"), std::string::npos) << r.out;
  ASSERT_TRUE(summary["links"].is_array() && !summary["links"].empty()) << summary["links"];
  for (const auto& s : fam["host"]["studies"]) {
    const Json& e = s["efficiency"];
    EXPECT_EQ(e["link"], (Json{{"kind", "host-memory"}})) << e;
    EXPECT_TRUE(e["efficiency"].is_number() || !e["why_none"].get<std::string>().empty()) << e;
  }
  for (const auto& s : fam["tcp"]["studies"]) {
    EXPECT_NE(s["efficiency"]["why_none"].get<std::string>().find("no line rate"), std::string::npos) << s;
  }
  // A plain MPI program started through job.sh sees every variable the bundle sets.
  if (test::have_program("mpirun")) {
    std::string show;
    std::vector<std::pair<std::string, std::string>> expect;
    for (const auto& l : summary["env"]) {
      if (l["left_out"].get<bool>()) continue;
      expect.emplace_back(l["var"], l["value"]);
    }
    auto run = test::run_shell(std::string(kMpiRoot) + " " + (t / "b" / "job.sh").string() +
                               " mpirun -np 2 --oversubscribe env");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    for (const auto& [var, value] : expect) {
      const std::string line = var + "=" + value;
      size_t n = 0;
      for (const auto& l : test::lines_of(run.out)) n += l == line;
      EXPECT_EQ(n, 2u) << line << "\n" << run.out;  // both ranks
    }
  }
  // The report: well-formed, and Chromium renders it without console messages.
  const std::string html = test::read_file(t / "b" / "report.html");
  EXPECT_EQ(test::check_well_formed(html), "");
  for (const char* s : {"host-copy", "ucx-shm", "tcp-stream", "Skipped", "job.sh", "against the link's ceiling", "Links",
                        "certified (inside acceltune)", "delivered: own plan", "delivered: bundle"}) {
    EXPECT_NE(html.find(s), std::string::npos) << s;
  }
  const std::string chromium = test::chromium_binary();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (tools/setup.sh installs it for this test)";
  auto dom = test::run_chromium(chromium, t / "profile", "--dump-dom", t / "b" / "report.html");
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_FALSE(test::has_console_message(dom.err)) << dom.err;
  EXPECT_NE(dom.out.find("acceltune bring-up"), std::string::npos);
  // It fits a 1,300-pixel window without scrolling sideways, the families table within its section
  // too: the page with a line of script that writes how far the page, or the families section,
  // reaches past its width (0 when both fit).
  std::string measured = html;
  measured.insert(measured.rfind("</body>"), "<script>var d = document.documentElement, f = "
                                             "document.getElementById('families'); document.body.setAttribute("
                                             "'data-over', String(Math.max(d.scrollWidth - d.clientWidth, "
                                             "f.scrollWidth - f.clientWidth)));</script>");
  test::write_file(t / "measured.html", measured);
  auto wide = test::run_chromium(chromium, t / "profile", "--window-size=1300,1000 --dump-dom", t / "measured.html");
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  const auto at = wide.out.find("data-over=\"");
  ASSERT_NE(at, std::string::npos) << wide.out.substr(0, 400);
  EXPECT_EQ(std::stoi(wide.out.substr(at + 11)), 0) << "pixels past a 1,300-pixel window";
}

}  // namespace
}  // namespace acceltune
