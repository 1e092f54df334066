// Link ceilings, efficiencies and verdicts: computed from recorded probes (tests/fixtures/probes)
// against hand-computed values, the suggestions on recorded faults, and on this machine the
// host-copy efficiency against the probe's measured memory reference.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>

#include "tests/helpers.hpp"
#include "probe/fingerprint.hpp"
#include "probe/links.hpp"

namespace acceltune {
namespace {

using test::run_cli;

Json recorded_probe(const std::string& name) {
  std::ifstream in(std::string(ACCELTUNE_TEST_FIXTURES) + "/probes/" + name);
  EXPECT_TRUE(in.good()) << name;
  return Json::parse(in);
}

const LinkCeiling* find(const std::vector<LinkCeiling>& cs, const std::string& id) {
  for (const auto& c : cs) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

// A certified table with one size per (bytes, value) pair; the default measured at half.
BestTable certified_table(std::vector<std::pair<uint64_t, double>> sizes, const std::string& unit = "GB/s") {
  BestTable b;
  b.unit = unit;
  b.certified = true;
  for (const auto& [bytes, value] : sizes) {
    SizeBest s;
    s.bytes = bytes;
    s.best_trial = 1;
    s.best_value = value * 1.1;  // the search's figure: never the one an efficiency uses when certified
    s.certified = true;
    s.certified_rounds = 3;
    s.certified_trial = 1;
    s.certified_value = value;
    s.certified_default_value = value / 2;
    b.sizes.push_back(s);
  }
  return b;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines) {
    if (l.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(Links, PcieRatesAfterLineEncoding) {
  EXPECT_NEAR(pcie_gbps(5, 16), 63.0, 0.02);  // 32 GT/s x 16 x 128/130 / 8
  EXPECT_NEAR(pcie_gbps(4, 8), 15.75, 0.01);
  EXPECT_NEAR(pcie_gbps(3, 16), 15.75, 0.01);
  EXPECT_NEAR(pcie_gbps(2, 16), 8.0, 1e-9);    // 5 GT/s x 16 x 8/10 / 8
  EXPECT_NEAR(pcie_gbps(6, 16), 121.0, 0.01);  // 64 GT/s x 16 x 242/256 / 8
  EXPECT_EQ(pcie_gbps(7, 16), 0);
  EXPECT_EQ(pcie_gbps(5, 0), 0);
}

TEST(Links, VerdictThresholds) {
  EXPECT_EQ(verdict_of(1.02), "good");
  EXPECT_EQ(verdict_of(0.80), "good");
  EXPECT_EQ(verdict_of(0.7999), "check");
  EXPECT_EQ(verdict_of(0.50), "check");
  EXPECT_EQ(verdict_of(0.4999), "investigate");
  EXPECT_EQ(verdict_of(0), "investigate");
  EXPECT_EQ(verdict_thresholds_text(), "good >= 80%, check >= 50%, investigate below");
}

TEST(Links, CeilingsOfAnH200Node) {
  const auto cs = link_ceilings(recorded_probe("h200-node.json"));
  const LinkCeiling* pcie = find(cs, "gpu0.pcie");
  ASSERT_TRUE(pcie && pcie->gbps);
  EXPECT_NEAR(*pcie->gbps, 63.0, 0.02);  // gen 5 x16
  EXPECT_TRUE(pcie->finding.empty()) << pcie->finding;
  EXPECT_NE(pcie->basis.find("gen 5 x16"), std::string::npos) << pcie->basis;

  const LinkCeiling* nvlink = find(cs, "gpu0.nvlink");
  ASSERT_TRUE(nvlink && nvlink->gbps);
  EXPECT_DOUBLE_EQ(*nvlink->gbps, 18 * 25.0);  // NVLink 4: 18 links x 25 GB/s per direction

  const LinkCeiling* mem = find(cs, "gpu0.memory");
  ASSERT_TRUE(mem && mem->gbps);
  EXPECT_DOUBLE_EQ(*mem->gbps, 2400.0);  // 4.8 TB/s read + written: 2.4 TB/s of bytes copied
  EXPECT_NE(mem->basis.find("read plus bytes written"), std::string::npos) << mem->basis;

  const LinkCeiling* nic = find(cs, "nic:ens1np0");
  ASSERT_TRUE(nic && nic->gbps);
  EXPECT_DOUBLE_EQ(*nic->gbps, 50.0);  // 400 Gb/s; its gen 5 x16 PCIe (63 GB/s) is wider
  EXPECT_EQ(nic->basis.find("narrower"), std::string::npos) << nic->basis;

  const LinkCeiling* ib = find(cs, "rdma:mlx5_0/1");
  ASSERT_TRUE(ib && ib->gbps);
  EXPECT_DOUBLE_EQ(*ib->gbps, 50.0);  // NDR 4x: 400 Gb/s of data

  const LinkCeiling* veth = find(cs, "nic:veth1a");
  ASSERT_TRUE(veth);
  EXPECT_FALSE(veth->gbps) << "a veth has no line rate";
  EXPECT_NE(veth->basis.find("no ceiling"), std::string::npos);
  const LinkCeiling* lo = find(cs, "lo");
  ASSERT_TRUE(lo);
  EXPECT_FALSE(lo->gbps);

  const LinkCeiling* host = find(cs, "host-memory");
  ASSERT_TRUE(host && host->gbps);
  EXPECT_DOUBLE_EQ(*host->gbps, 121.5);
  const LinkCeiling* node1 = find(cs, "host-memory.node1");
  ASSERT_TRUE(node1 && node1->gbps);
  EXPECT_DOUBLE_EQ(*node1->gbps, 118.9);
}

TEST(Links, ADowntrainedLinkIsAFinding) {
  const Json probe = recorded_probe("downtrained-cross-numa.json");
  const auto cs = link_ceilings(probe);
  const LinkCeiling* pcie = find(cs, "gpu0.pcie");
  ASSERT_TRUE(pcie && pcie->gbps);
  EXPECT_NEAR(*pcie->gbps, 63.0, 0.02) << "the ceiling is the link's maximum";
  EXPECT_NE(pcie->state.find("gen 4 x8 (15.8 GB/s) of maximum gen 5 x16"), std::string::npos) << pcie->state;
  EXPECT_NE(pcie->finding.find("width x8 of x16"), std::string::npos) << pcie->finding;
  EXPECT_NE(pcie->finding.find("gen 4 of gen 5"), std::string::npos) << pcie->finding;
  const LinkCeiling* mem = find(cs, "gpu0.memory");
  ASSERT_TRUE(mem && mem->gbps);
  EXPECT_DOUBLE_EQ(*mem->gbps, 3350.0 / 2);  // H100 SXM: 3.35 TB/s
  EXPECT_EQ(find(cs, "gpu0.nvlink"), nullptr) << "no active NVLink, no NVLink row";
  const LinkCeiling* host = find(cs, "host-memory");
  ASSERT_TRUE(host);
  EXPECT_FALSE(host->gbps) << "this probe has no memory reference";

  // An h2d copy at 14 GB/s against 63: investigate, and the probe says why.
  const Efficiency e = efficiency_of(probe, Json{{"kind", "pcie"}, {"gpu", 0}},
                                     certified_table({{1 << 20, 9.0}, {256 << 20, 14.0}}));
  ASSERT_TRUE(e.efficiency);
  EXPECT_NEAR(*e.efficiency, 14.0 / pcie_gbps(5, 16), 1e-9);
  EXPECT_EQ(e.bytes, 256u << 20) << "measured where the link saturates";
  EXPECT_EQ(e.measured_is, "certified");
  EXPECT_EQ(e.verdict, "investigate");
  EXPECT_TRUE(any_contains(e.suggestions, "trained below its maximum")) << Json(e.suggestions).dump();
  EXPECT_TRUE(any_contains(e.suggestions, "governor is 'powersave'")) << Json(e.suggestions).dump();
  EXPECT_NE(e.line().find("22%, investigate"), std::string::npos) << e.line();
}

TEST(Links, ACrossNumaGpuNicPairIsSuggested) {
  const Json probe = recorded_probe("downtrained-cross-numa.json");
  // 200 Gb/s: 25 GB/s. A stream at 10 GB/s is 40%.
  const Efficiency e = efficiency_of(probe, Json{{"kind", "nic"}, {"interface", "eth2"}},
                                     certified_table({{16 << 20, 10.0}}));
  ASSERT_TRUE(e.efficiency);
  EXPECT_DOUBLE_EQ(*e.efficiency, 0.4);
  EXPECT_EQ(e.verdict, "investigate");
  EXPECT_TRUE(any_contains(e.suggestions, "GPU 0 (NVIDIA H100 80GB HBM3) is on NUMA node 1 and eth2 on node 0"))
      << Json(e.suggestions).dump();
  // The same NIC on the H200 node, where GPU and NIC share node 0: no such suggestion.
  const auto same = link_suggestions(recorded_probe("h200-node.json"), Json{{"kind", "nic"}, {"interface", "ens1np0"}});
  EXPECT_FALSE(any_contains(same, "NUMA node")) << Json(same).dump();
  // An MTU below the peer's, when the far end told it.
  const auto mtu = link_suggestions(probe, Json{{"kind", "nic"}, {"interface", "eth2"}, {"peer_mtu", 9000}});
  EXPECT_TRUE(any_contains(mtu, "MTU 1500 is below the peer's 9000")) << Json(mtu).dump();
}

TEST(Links, AGoodFigureGetsNoSuggestions) {
  const Json probe = recorded_probe("downtrained-cross-numa.json");
  const Efficiency e = efficiency_of(probe, Json{{"kind", "nic"}, {"interface", "eth2"}},
                                     certified_table({{16 << 20, 23.5}}));
  ASSERT_TRUE(e.efficiency);
  EXPECT_EQ(e.verdict, "good");
  EXPECT_TRUE(e.suggestions.empty());
}

TEST(Links, NoCeilingNoEfficiency) {
  const Json probe = recorded_probe("h200-node.json");
  const BestTable b = certified_table({{1 << 20, 5.0}});
  for (const char* kind : {"veth", "loopback"}) {
    const Efficiency e = efficiency_of(probe, Json{{"kind", kind}}, b);
    EXPECT_FALSE(e.efficiency) << kind;
    EXPECT_NE(e.why_none.find("no line rate"), std::string::npos) << e.why_none;
    EXPECT_NE(e.line().find("no efficiency"), std::string::npos) << e.line();
  }
  const Efficiency none = efficiency_of(probe, Json(nullptr), b);
  EXPECT_FALSE(none.efficiency);
  EXPECT_NE(none.why_none.find("records no link"), std::string::npos);
  // A latency objective is not judged against a bandwidth.
  const Efficiency lat = efficiency_of(probe, Json{{"kind", "rdma"}, {"device", "mlx5_0"}, {"port", 1}},
                                       certified_table({{8, 2.1}}, "us"));
  EXPECT_FALSE(lat.efficiency);
  EXPECT_NE(lat.why_none.find("not a bandwidth"), std::string::npos) << lat.why_none;
}

TEST(Links, GpuPeerIsNvlinkWhereActiveElsePcie) {
  const BestTable b = certified_table({{64 << 20, 360.0}});
  const Efficiency nv = efficiency_of(recorded_probe("h200-node.json"), Json{{"kind", "gpu-peer"}, {"gpu", 0}}, b);
  EXPECT_EQ(nv.link_id, "gpu0.nvlink");
  ASSERT_TRUE(nv.efficiency);
  EXPECT_DOUBLE_EQ(*nv.efficiency, 0.8);
  const Efficiency pc =
      efficiency_of(recorded_probe("downtrained-cross-numa.json"), Json{{"kind", "gpu-peer"}, {"gpu", 0}}, b);
  EXPECT_EQ(pc.link_id, "gpu0.pcie");
}

TEST(Links, HostMemorySkipsSizesServedFromCaches) {
  // The reference buffer is 128 MiB: sizes below 64M do not count.
  const Json probe = recorded_probe("h200-node.json");
  const Efficiency small = efficiency_of(probe, Json{{"kind", "host-memory"}}, certified_table({{16 << 20, 300.0}}));
  EXPECT_FALSE(small.efficiency);
  EXPECT_NE(small.why_none.find("64M"), std::string::npos) << small.why_none;
  const Efficiency e =
      efficiency_of(probe, Json{{"kind", "host-memory"}}, certified_table({{16 << 20, 300.0}, {64 << 20, 60.75}}));
  ASSERT_TRUE(e.efficiency);
  EXPECT_EQ(e.bytes, 64u << 20);
  EXPECT_DOUBLE_EQ(*e.efficiency, 0.5);
  EXPECT_EQ(e.verdict, "check");
  EXPECT_TRUE(e.note.empty()) << e.note;
  // Where the probe knows the last-level cache and both buffers fit it, the figure is flagged.
  Json cached = probe;
  cached["memory_reference"]["llc_bytes"] = int64_t{512} << 20;
  const Efficiency c =
      efficiency_of(cached, Json{{"kind", "host-memory"}}, certified_table({{64 << 20, 150.0}}));
  ASSERT_TRUE(c.efficiency);
  EXPECT_NE(c.note.find("at 64M the two buffers (128M) fit this machine's 512M last-level cache"), std::string::npos)
      << c.note;
  EXPECT_NE(c.note.find("above the reference"), std::string::npos) << c.note;
  EXPECT_EQ(c.verdict, "no verdict");  // a figure that may come from the cache judges no memory
}

// The memory reference is itself a measurement that moves between runs (16.6 to 27.6 GB/s on one
// machine): a verdict is given only where it holds from the reference's best repetition to its
// median, so two references give the same verdict for one study, or one of them gives none.
TEST(Links, AMovingMemoryReferenceGivesOneVerdictOrNone) {
  const Json base = recorded_probe("h200-node.json");
  const auto with_reference = [&](double best, double median) {
    Json p = base;
    p["memory_reference"]["copy_gbps"] = best;
    p["memory_reference"]["copy_gbps_median"] = median;
    p["memory_reference"]["llc_bytes"] = nullptr;
    return efficiency_of(p, Json{{"kind", "host-memory"}}, certified_table({{64 << 20, 21.3}}));
  };
  const Efficiency low = with_reference(16.6, 14.0), high = with_reference(27.6, 20.0);
  EXPECT_EQ(low.verdict, "good");  // 128% to 152%
  ASSERT_TRUE(high.efficiency && high.efficiency_high);
  EXPECT_NEAR(*high.efficiency, 21.3 / 27.6, 1e-9);
  EXPECT_NEAR(*high.efficiency_high, 21.3 / 20.0, 1e-9);
  EXPECT_EQ(high.verdict, "no verdict");  // 77% (check) to 106.5% (good)
  EXPECT_NE(high.note.find("spans two verdicts"), std::string::npos) << high.note;
  EXPECT_NE(high.short_text().find("77-106% no verdict"), std::string::npos) << high.short_text();
  // A reference whose repetitions agree gives its verdict.
  EXPECT_EQ(with_reference(27.6, 27.0).verdict, "check");
}

TEST(Links, GpuMemoryTable) {
  EXPECT_EQ(gpu_memory_spec_gbps("NVIDIA H200", 141), 4800.0);
  EXPECT_EQ(gpu_memory_spec_gbps("NVIDIA H100 PCIe", 80), 2000.0);
  EXPECT_EQ(gpu_memory_spec_gbps("NVIDIA A100-SXM4-80GB", 80), 2039.0);
  EXPECT_EQ(gpu_memory_spec_gbps("NVIDIA A100-SXM4-40GB", 40), 1555.0);
  EXPECT_EQ(gpu_memory_spec_gbps("NVIDIA GH200 480GB", 96), 4000.0);
  EXPECT_EQ(gpu_memory_spec_gbps("NVIDIA L4", 24), 300.0);
  EXPECT_FALSE(gpu_memory_spec_gbps("Some Future GPU", 512));
}

// On this machine: the probe measures the memory reference, lists the links, and a host-copy
// search reports its efficiency against that reference.
TEST(LinksHere, ProbeListsLinksAndTheMemoryReference) {
  auto j = run_cli({"probe", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json probe = Json::parse(j.out);
  ASSERT_TRUE(probe["memory_reference"].is_object()) << probe["notes"].dump();
  EXPECT_GT(probe["memory_reference"]["copy_gbps"].get<double>(), 0.1);
  EXPECT_GE(probe["memory_reference"]["threads"].get<int>(), 1);
  auto h = run_cli({"probe"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_NE(h.out.find("Links and their ceilings"), std::string::npos) << h.out;
  EXPECT_TRUE(std::regex_search(h.out, std::regex(R"(host-memory +host memory: [0-9.]+ GB/s)"))) << h.out;
  EXPECT_TRUE(std::regex_search(h.out, std::regex(R"(lo +loopback \(lo\): no ceiling: loopback has no line rate)"))) << h.out;
  // Another machine's stored probe: its links, its findings.
  auto l = run_cli({"probe", "--links", std::string(ACCELTUNE_TEST_FIXTURES) + "/probes/downtrained-cross-numa.json"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("GPU 0 (NVIDIA H100 80GB HBM3) PCIe: 63.0 GB/s"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("FINDING: trained below its maximum: width x8 of x16"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("FINDING: the CPU frequency governor is 'powersave'"), std::string::npos) << l.out;
}

// A check of the machine's identity (verify) needs no copy measured: same id, no reference.
TEST(LinksHere, AnIdentityProbeSkipsTheMeasurementAndKeepsTheId) {
  const Json full = probe_fingerprint();
  const Json identity = probe_fingerprint(ProbeScope::identity);
  EXPECT_TRUE(full["memory_reference"].is_object()) << full["notes"].dump();
  EXPECT_FALSE(identity.contains("memory_reference")) << identity["memory_reference"].dump();
  EXPECT_EQ(full["id"], identity["id"]);
  EXPECT_EQ(full["fingerprint_fields"], identity["fingerprint_fields"]);
}

TEST(LinksHere, HostCopyReportsItsEfficiency) {
  test::TempDir dir;
  const auto out = dir.path() / "study";
  auto r = run_cli({"search", "--space", "host-copy", "--sizes", "1M,64M", "--budget", "6", "--certify-rounds", "2",
                    "--verify-rounds", "0", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json study = Json::parse(test::read_file(out / "study.json"));
  EXPECT_EQ(study["link"], (Json{{"kind", "host-memory"}}));
  // "...: link host memory: 9.81 GB/s certified at 64M of 11.4 GB/s = 86%, good (...)"
  std::smatch m;
  const std::regex line(R"(efficiency \(inside acceltune, against the link's ceiling\): link host memory: ([0-9.]+) GB/s )"
                        R"(certified at 64M of ([0-9.]+) GB/s = ([0-9]+)%(?: to [0-9]+%)?, (good|check|investigate|no verdict))");
  ASSERT_TRUE(std::regex_search(r.out, m, line)) << r.out;
  const double measured = std::stod(m[1]), ceiling = std::stod(m[2]);
  const double reference = study["fingerprint"]["memory_reference"]["copy_gbps"].get<double>();
  EXPECT_NEAR(ceiling, reference, reference * 0.06) << "the ceiling is the study's own probe's reference";
  EXPECT_NEAR(std::stod(m[3]), measured / ceiling * 100, 3.0);
  // The reference is measured: a verdict only where it holds from its best repetition to its median.
  const double median = study["fingerprint"]["memory_reference"]["copy_gbps_median"].get<double>();
  // (Also none where the buffers fit the last-level cache: the figure may then come from the cache.)
  const bool cached = r.out.find("may come from the cache rather than memory") != std::string::npos;
  if (m[4].str() == "no verdict") {
    EXPECT_TRUE(cached || verdict_of(measured / reference) != verdict_of(measured / median)) << r.out;
  } else {
    EXPECT_EQ(m[4].str(), verdict_of(measured / reference));
    EXPECT_EQ(m[4].str(), verdict_of(measured / median));
  }
  // `best` prints the same line, and the report holds the section.
  auto b = run_cli({"best", out.string()});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find(m[0].str()), std::string::npos) << b.out;
  const auto html = dir.path() / "r.html";
  auto rep = run_cli({"report", out.string(), "--html", html.string()});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const std::string page = test::read_file(html);
  EXPECT_NE(page.find("Against the link's ceiling"), std::string::npos);
  EXPECT_NE(page.find("STREAM-style copy"), std::string::npos);
  EXPECT_TRUE(test::check_well_formed(page).empty()) << test::check_well_formed(page);
  // compare: each study against its own machine's ceiling, in the terminal, JSON and page.
  auto c = run_cli({"compare", out.string(), out.string(), "--html", (dir.path() / "c.html").string()});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("against each study's own link ceiling"), std::string::npos) << c.out;
  for (const char* label : {"#1 ", "#2 "}) {
    EXPECT_TRUE(std::regex_search(c.out, std::regex(std::string(label) + R"([0-9]+(?:-[0-9]+)?% (good|check|investigate|no verdict) \([0-9.]+ GB/s of [0-9.]+ GB/s, host memory\))")))
        << c.out;
  }
  auto cj = run_cli({"compare", out.string(), out.string(), "--json"});
  ASSERT_EQ(cj.exit_code, 0) << cj.err;
  const Json cmp = Json::parse(cj.out);
  EXPECT_EQ(cmp["studies"][1]["efficiency"]["link_label"], "host memory") << cmp["studies"][1];
  EXPECT_NE(test::read_file(dir.path() / "c.html").find("Against each study's own link ceiling"), std::string::npos);
}

}  // namespace
}  // namespace acceltune
