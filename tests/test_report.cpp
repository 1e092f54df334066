// acceltune report: the page is well-formed, self-contained, escapes what comes from the study,
// has one SVG per plot section with labelled axes, renders a running study and failed trials, and
// a headless Chromium renders it without console errors.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "results/compare.hpp"
#include "results/report_html.hpp"
#include "results/svg.hpp"
#include "tests/helpers.hpp"
#include "tests/study_files.hpp"

namespace acceltune {
namespace {

namespace fs = std::filesystem;
using test::StudySpec;
using test::TempDir;

using test::k1M;
using test::k64K;
const std::string kHostile = "<script>alert('x')</script>&\"";

// The space's method param carries the hostile string as a value; a failed trial has it in its
// error; the description has it too.
StudySpec hostile_study() {
  StudySpec s;
  Json sp = Json::parse(test::tiny_space("tiny", 4, kHostile));
  sp["description"] = "copies " + kHostile;
  s.space_json = sp.dump();
  s.sizes = {k64K, k1M};
  s.fingerprint = Json{{"host", "node <b>"}, {"cpu", {{"model", "Test CPU"}, {"logical_cores", 4}}}, {"id", "abcd"}};
  s.trials = {{Json::object(), {{k64K, 10}, {k1M, 20}}, ""},
              {Json{{"threads", 2}}, {{k64K, 15}, {k1M, 50}}, ""},
              {Json{{"method", kHostile}}, {{k64K, 12}, {k1M, 30}}, ""},
              {Json{{"threads", 3}}, {{k64K, 11}}, "segfault " + kHostile},
              {Json{{"chunk", 4096}}, {{k64K, 2}, {k1M, 3}}, ""}};
  return s;
}

std::string report_of(const fs::path& dir) {
  auto s = load_study_dir(dir.string());
  EXPECT_TRUE(s) << s.error().message;
  return s ? report_html(*s) : "";
}

// The text of each <section class="plot">, by id.
std::map<std::string, std::string> plot_sections(const std::string& html) {
  std::map<std::string, std::string> out;
  static const std::regex open(R"~(<section id="([a-z]+)" class="plot">)~");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), open); it != std::sregex_iterator(); ++it) {
    const size_t start = static_cast<size_t>(it->position(0));
    const size_t end = html.find("</section>", start);
    out[(*it)[1]] = html.substr(start, end - start);
  }
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Report, CheckerFindsBrokenPages) {
  EXPECT_EQ(test::check_well_formed("<html><body><p>a &amp; b</p></body></html>"), "");
  EXPECT_NE(test::check_well_formed("<html><body><p>a</body></html>"), "");
  EXPECT_NE(test::check_well_formed("<p>a & b</p>"), "");
  EXPECT_NE(test::check_well_formed("<p>a <script> b</p>"), "");
  EXPECT_NE(test::check_well_formed("<p class=x>a</p>"), "");
}

TEST(Report, WellFormedSelfContainedAndEscaped) {
  TempDir t;
  test::write_study(t / "s", hostile_study());
  const std::string html = report_of(t / "s");
  ASSERT_FALSE(html.empty());
  EXPECT_EQ(test::check_well_formed(html), "");
  // Self-contained: nothing to fetch.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // The hostile string only escaped.
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"), std::string::npos);

  // One SVG per plot section, with axis labels.
  const auto plots = plot_sections(html);
  ASSERT_EQ(plots.size(), 3u);
  for (const auto& [id, text] : plots) {
    EXPECT_EQ(count(text, "<svg"), 1u) << id;
    EXPECT_EQ(count(text, "</svg>"), 1u) << id;
    EXPECT_GE(count(text, "class=\"axis-label\""), 2u) << id;
    EXPECT_NE(text.find("<figcaption>"), std::string::npos) << id;
  }
  EXPECT_NE(plots.at("bandwidth").find("message size (bytes, log2 scale)"), std::string::npos);
  EXPECT_NE(plots.at("bandwidth").find("bandwidth (GB/s)"), std::string::npos);
  EXPECT_NE(plots.at("bandwidth").find(">64K<"), std::string::npos);
  EXPECT_NE(plots.at("bandwidth").find(">1M<"), std::string::npos);
  EXPECT_NE(plots.at("bandwidth").find("p10 to p90"), std::string::npos);
  EXPECT_NE(plots.at("convergence").find("trial number"), std::string::npos);
  // Every param has a panel.
  for (const char* p : {">threads<", ">chunk (bytes)<", ">method<"}) EXPECT_NE(plots.at("params").find(p), std::string::npos) << p;

  // The failed trial is listed, and not plotted: 4 of 5 trials are dots on the convergence plot.
  const size_t failed = html.find("<section id=\"failed\">");
  ASSERT_NE(failed, std::string::npos);
  EXPECT_NE(html.find("segfault &lt;script&gt;", failed), std::string::npos);
  EXPECT_EQ(count(plots.at("convergence"), "<title>each trial:"), 4u);
  EXPECT_NE(plots.at("convergence").find("failed trial"), std::string::npos);
  // The header.
  EXPECT_NE(html.find("5 (4 ok, 1 failed)"), std::string::npos);
  EXPECT_NE(html.find("id abcd"), std::string::npos);
}

TEST(Report, HeadlinesCertifiedAndDeliveredGainsNotTheLuckiestMeasurement) {
  TempDir t;
  test::write_study(t / "s", hostile_study());
  auto loaded = load_study_dir((t / "s").string());
  ASSERT_TRUE(loaded) << loaded.error().message;
  BestTable b = loaded->best;
  b.certified = true;
  SizeBest& z = b.sizes[0];
  z.observed_trial = 1;
  z.observed_value = 83.3;  // one lucky sample
  z.certified = true;
  z.certified_trial = 1;
  z.certified_ratio = 2.47;
  z.ci_low = 2.20;
  z.ci_high = 2.77;
  z.certified_rounds = 5;
  z.certified_value = 41.5;
  z.certified_default_value = 16.8;
  z.significant = true;
  z.delivered = test::delivered_gain(1.93, 1.61, 2.31);
  b.delivery.state = "measured";
  b.delivery.client = "a plain client";
  test::write_file(t / "s" / "best.json", b.to_json().dump());
  std::string html = report_of(t / "s");
  EXPECT_EQ(test::check_well_formed(html), "");
  EXPECT_NE(html.find("certified 2.47x [2.20, 2.77]"), std::string::npos);
  EXPECT_NE(html.find("delivered 1.93x [1.61, 2.31]"), std::string::npos);
  EXPECT_NE(html.find("best single measurement"), std::string::npos);
  // The lucky sample is a table cell, never the headline or the tuned line.
  EXPECT_EQ(html.find("gain 4.9"), std::string::npos);
  for (const auto& [id, text] : plot_sections(html)) EXPECT_EQ(text.find("83.3"), std::string::npos) << id;
  // Without a delivered measurement the report says so, and why.
  z.delivered.reset();
  b.delivery = Delivery{};
  b.delivery.why = "kernel host-copy has no plain client";
  test::write_file(t / "s" / "best.json", b.to_json().dump());
  html = report_of(t / "s");
  EXPECT_NE(html.find("not verified"), std::string::npos);
  EXPECT_NE(html.find("has no plain client"), std::string::npos);
  EXPECT_EQ(html.find("delivered 1.93x"), std::string::npos);
}

// One config and size, one figure: where certification measured the exported config, `best`, the
// JSON export, the report and compare all show its certified medians (not the search's trial-0
// median, not another trial's); where the exported config is the default after its winner did
// not ship, they show the default's median and say whose gain the interval is.
TEST(Report, OneConfigAndSizeShowOneValueEverywhere) {
  TempDir t;
  StudySpec spec;
  spec.space_json = test::tiny_space("tiny");
  spec.sizes = {k64K, k1M};
  spec.trials = {{Json::object(), {{k64K, 10}, {k1M, 20}}, ""},
                 {Json{{"threads", 2}}, {{k64K, 15}, {k1M, 50}}, ""},
                 {Json{{"threads", 3}}, {{k64K, 14}, {k1M, 45}}, ""}};
  test::write_study(t / "s", spec);
  auto loaded = load_study_dir((t / "s").string());
  ASSERT_TRUE(loaded) << loaded.error().message;
  BestTable b = loaded->best;
  b.certified = true;
  for (size_t i = 0; i < 2; ++i) {
    SizeBest& z = b.sizes[i];
    z.certified = true;
    z.certified_trial = 1;
    z.certified_ratio = 2.47;
    z.ci_low = 2.20;
    z.ci_high = 2.77;
    z.certified_rounds = 5;
    z.certified_value = i == 0 ? 41.5 : 52.5;
    z.certified_default_value = i == 0 ? 16.8 : 21.3;
    z.significant = true;
    Candidate c;
    c.trial = 1;
    c.config = z.chosen_config;
    c.value = 40, c.default_value = 17, c.rounds = 3;
    z.candidates = {c};
  }
  // 1M: the winner did not ship, so the default is exported there.
  b.sizes[1].chosen_config = b.default_config;
  b.sizes[1].chosen_is_default = true;
  ASSERT_NE(b.sizes[0].chosen_config, b.default_config);
  test::write_file(t / "s" / "best.json", b.to_json().dump());

  auto best = test::run_cli({"best", (t / "s").string()});
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const auto row = [&](const std::string& size) {
    for (const auto& l : test::lines_of(best.out)) {
      if (l.rfind(size + " ", 0) == 0) return l;
    }
    return std::string();
  };
  EXPECT_NE(row("64K").find(" 16.8 "), std::string::npos) << best.out;
  EXPECT_NE(row("64K").find(" 41.5 "), std::string::npos) << best.out;
  EXPECT_EQ(row("64K").find(" 10 "), std::string::npos) << best.out;  // the search's trial 0
  EXPECT_NE(row("1M").find("(default): the gain is #1's, which did not ship"), std::string::npos) << best.out;
  EXPECT_EQ(row("1M").find("52.5"), std::string::npos) << best.out;
  EXPECT_EQ(count(row("1M"), " 21.3 "), 2u) << best.out;

  auto json = test::run_cli({"export", (t / "s").string(), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json j = Json::parse(json.out);
  EXPECT_EQ(j["sizes"][0]["exported"]["value"], 41.5);
  EXPECT_EQ(j["sizes"][0]["exported"]["default_value"], 16.8);
  EXPECT_EQ(j["sizes"][0]["exported"]["trial"], 1);
  EXPECT_EQ(j["sizes"][0]["exported"]["value_is"], "certified medians");
  EXPECT_EQ(j["sizes"][1]["exported"]["value"], 21.3);
  EXPECT_EQ(j["sizes"][1]["exported"]["config"], b.default_config);

  const std::string html = report_of(t / "s");
  EXPECT_NE(html.find("41.5 / 16.8"), std::string::npos);
  EXPECT_NE(html.find("21.3 / 21.3"), std::string::npos);

  auto cmp = compare_studies({*load_study_dir((t / "s").string()), *load_study_dir((t / "s").string())});
  ASSERT_TRUE(cmp) << cmp.error().message;
  ASSERT_FALSE(cmp->cells.empty());
  EXPECT_EQ(cmp->cells[0][0].best_value, 41.5);
  EXPECT_EQ(cmp->cells[0][0].default_value, 16.8);
}

TEST(Report, PythonHtmlParserAgrees) {
  if (!test::have_program("python3")) GTEST_SKIP() << "python3 is not installed; the built-in checker ran in the other tests";
  TempDir t;
  test::write_study(t / "s", hostile_study());
  test::write_file(t / "r.html", report_of(t / "s"));
  test::write_file(t / "check.py", R"~(
import sys
from html.parser import HTMLParser
VOID = {"meta", "br", "hr", "img", "input", "link", "wbr"}
class P(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []
    def handle_starttag(self, tag, attrs):
        if tag not in VOID: self.stack.append(tag)
    def handle_startendtag(self, tag, attrs): pass
    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> at %s closes %s" % (tag, self.getpos(), self.stack[-1:] or "nothing"))
        else: self.stack.pop()
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read()); p.close()
if p.stack: p.errors.append("never closed: %s" % p.stack)
print("\n".join(p.errors)); sys.exit(1 if p.errors else 0)
)~");
  auto r = test::run_shell("python3 " + (t / "check.py").string() + " " + (t / "r.html").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(Report, RunningStudyRenders) {
  TempDir t;
  StudySpec s = hostile_study();
  s.write_best = false;
  s.trials.resize(2);
  test::write_study(t / "s", s);
  auto r = test::run_cli({"report", (t / "s").string(), "--html", (t / "r.html").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no best.json yet"), std::string::npos) << r.err;
  const std::string html = test::read_file(t / "r.html");
  EXPECT_EQ(test::check_well_formed(html), "");
  EXPECT_NE(html.find("still running or was stopped"), std::string::npos);
  EXPECT_EQ(plot_sections(html).size(), 3u);
}

TEST(Report, CliErrors) {
  TempDir t;
  EXPECT_EQ(test::run_cli({"report", (t / "none").string(), "--html", (t / "r.html").string()}).exit_code, 2);
  EXPECT_EQ(test::run_cli({"report", (t / "none").string()}).exit_code, 2);  // --html is required
  test::write_study(t / "s", hostile_study());
  auto r = test::run_cli({"report", (t / "s").string(), "--html", (t / "no-dir" / "r.html").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot write the page"), std::string::npos) << r.err;
}

TEST(Svg, SizeTicksAndLabels) {
  std::vector<std::string> labels;
  for (double v : svg::ticks(svg::Scale::log2_bytes, 48.0 * 1024, 80.0 * 1024 * 1024)) {
    labels.push_back(svg::tick_label(svg::Scale::log2_bytes, v));
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"64K", "256K", "1M", "4M", "16M", "64M"}));
  labels.clear();
  for (double v : svg::ticks(svg::Scale::log2_bytes, 1000, 1.2e9)) labels.push_back(svg::tick_label(svg::Scale::log2_bytes, v));
  for (const char* want : {"1K", "1M", "1G"}) {
    EXPECT_NE(std::find(labels.begin(), labels.end(), want), labels.end()) << want;
  }
  EXPECT_LE(labels.size(), 8u);
  const auto lin = svg::ticks(svg::Scale::linear, 0, 97);
  EXPECT_EQ(lin.front(), 0);
  EXPECT_GE(lin.size(), 4u);
  EXPECT_EQ(svg::escape("<a b=\"c\">&'"), "&lt;a b=&quot;c&quot;&gt;&amp;&#39;");
  svg::Chart c;
  c.x.label = "x <unit>";
  c.y.label = "y";
  c.series.push_back({"s & t", {{1, 2, 1.5, 2.5}, {2, 3}}, svg::palette(0)});
  const std::string out = svg::render(c);
  EXPECT_EQ(test::check_well_formed(out), "");
  EXPECT_NE(out.find("x &lt;unit&gt;"), std::string::npos);
  EXPECT_NE(out.find("s &amp; t"), std::string::npos);
}

// Chromium renders the page: no console messages, a screenshot that is a real picture, and a DOM
// with the three plots.
TEST(Report, ChromiumRendersWithoutConsoleErrors) {
  const std::string bin = test::chromium_binary();
  if (bin.empty()) GTEST_SKIP() << "chromium is not installed (tools/setup.sh installs it for this test)";
  TempDir t;
  // The console check must see an error when there is one.
  test::write_file(t / "bad.html", "<!DOCTYPE html><html><body><script>console.error('boom')</script></body></html>");
  auto bad = test::run_chromium(bin, t / "profile-bad", "--dump-dom", t / "bad.html");
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  ASSERT_TRUE(test::has_console_message(bad.err)) << "chromium's log shows no console lines; the check cannot work:\n" << bad.err;

  test::write_study(t / "s", hostile_study());
  test::write_file(t / "r.html", report_of(t / "s"));
  const fs::path png = t / "r.png";
  auto shot = test::run_chromium(bin, t / "profile", "--screenshot=" + png.string() + " --window-size=1200,2400", t / "r.html");
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  EXPECT_FALSE(test::has_console_message(shot.err)) << shot.err;
  ASSERT_TRUE(fs::exists(png)) << shot.err;
  // A PNG of the window's size, and not a blank one: a white page of this size compresses to a
  // few kilobytes, the report's plots and tables to far more.
  const std::string data = test::read_file(png);
  ASSERT_GT(data.size(), 24u);
  EXPECT_EQ(data.substr(1, 3), "PNG");
  auto be32 = [&](size_t off) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(data[off])) << 24) |
           (static_cast<uint32_t>(static_cast<unsigned char>(data[off + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<unsigned char>(data[off + 2])) << 8) |
           static_cast<uint32_t>(static_cast<unsigned char>(data[off + 3]));
  };
  EXPECT_EQ(be32(16), 1200u);
  EXPECT_EQ(be32(20), 2400u);
  EXPECT_GT(data.size(), 40000u) << "the screenshot looks blank";

  auto dom = test::run_chromium(bin, t / "profile-dom", "--dump-dom", t / "r.html");
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_FALSE(test::has_console_message(dom.err)) << dom.err;
  EXPECT_EQ(count(dom.out, "<svg"), 3u);
  EXPECT_NE(dom.out.find("Effect of each parameter"), std::string::npos);
}

}  // namespace
}  // namespace acceltune
