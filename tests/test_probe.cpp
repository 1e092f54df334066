// acceltune probe: the hardware assessment, its JSON, and the fingerprint's deciding fields.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/helpers.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/study.hpp"

namespace acceltune {
namespace {

using test::run_cli;

Json probe_json() {
  auto r = run_cli({"probe", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Json::parse(r.out);
}

TEST(Probe, JsonHoldsEverySection) {
  const Json j = probe_json();
  EXPECT_FALSE(j["cpu"]["model"].get<std::string>().empty());
  EXPECT_GE(j["cpu"]["logical_cores"].get<int>(), 1);
  ASSERT_TRUE(j["cpu"]["sockets"].is_number());
  EXPECT_GE(j["cpu"]["sockets"].get<int>(), 1);
  EXPECT_GE(j["cpu"]["cores"].get<int>(), 1);
  ASSERT_TRUE(j["numa"].is_array());
  ASSERT_FALSE(j["numa"].empty());
  EXPECT_TRUE(j["numa"][0]["memory_bytes"].is_number());
  EXPECT_FALSE(j["os"]["kernel"].get<std::string>().empty());
  ASSERT_TRUE(j["nics"].is_array());
  for (const auto& n : j["nics"]) {
    EXPECT_NE(n["name"], "lo");  // loopback is left out
    EXPECT_TRUE(n["virtual"].is_boolean());
    EXPECT_TRUE(n.contains("driver") && n.contains("speed_mbps") && n.contains("mtu") && n.contains("pci_address"));
  }
  EXPECT_TRUE(j["rdma"].is_array());
  ASSERT_TRUE(j["gpus"].is_array());
  EXPECT_TRUE(j["affinity"].is_array());
  for (const char* k : {"acceltune", "cuda_driver", "cuda_runtime", "nccl", "ucx", "mpi"}) {
    EXPECT_TRUE(j["versions"].contains(k)) << k;
  }
  if (j["gpus"].empty()) {
    // No GPU: a note says why, and nothing crashed.
    bool noted = false;
    for (const auto& n : j["notes"]) noted = noted || n.get<std::string>().rfind("gpus:", 0) == 0;
    EXPECT_TRUE(noted) << j["notes"].dump();
  } else {
    for (const auto& g : j["gpus"]) {
      EXPECT_FALSE(g["name"].get<std::string>().empty());
      EXPECT_TRUE(g["memory_bytes"].is_number());
    }
  }
  EXPECT_EQ(j["id"].get<std::string>().size(), 12u);
  EXPECT_EQ(j["id"], fingerprint_id(j));
  EXPECT_EQ(j["fingerprint_fields"], fingerprint_fields(j));
}

// A machine without an NVIDIA driver is told so, not given a CUDA error code that reads like a
// driver fault.
TEST(Probe, AMachineWithoutADriverIsToldSo) {
  std::error_code ec;
  if (std::filesystem::exists("/proc/driver/nvidia", ec)) GTEST_SKIP() << "this machine has an NVIDIA driver";
  auto r = test::run_cli({"probe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json probe = Json::parse(r.out);
  if (probe["gpus"].is_array() && !probe["gpus"].empty()) GTEST_SKIP() << "GPUs are listed without /proc/driver/nvidia";
  std::string gpu_notes;
  for (const auto& n : probe.value("notes", Json::array())) {
    if (n.get<std::string>().rfind("gpus: ", 0) == 0) gpu_notes += n.get<std::string>() + "\n";
  }
  if (gpu_notes.find("this build has no CUDA runtime") != std::string::npos) GTEST_SKIP() << gpu_notes;
  EXPECT_NE(gpu_notes.find("no NVIDIA driver"), std::string::npos) << gpu_notes;
  EXPECT_EQ(gpu_notes.find("cudaGetDeviceCount"), std::string::npos) << gpu_notes;
  EXPECT_EQ(gpu_notes.find("insufficient"), std::string::npos) << gpu_notes;
}

TEST(Probe, FingerprintIsStableAcrossRuns) {
  const Json a = probe_json();
  const Json b = probe_json();
  EXPECT_EQ(a["id"], b["id"]) << first_difference(a, b);
}

TEST(Probe, DecidingFieldsChangeTheIdOthersDoNot) {
  const Json base = probe_json();
  const std::string id = fingerprint_id(base);
  auto changed = [&](auto edit) {
    Json c = base;
    edit(c);
    return fingerprint_id(c) != id;
  };
  EXPECT_TRUE(changed([](Json& c) { c["cpu"]["model"] = "Other CPU"; }));
  EXPECT_TRUE(changed([](Json& c) { c["cpu"]["cores"] = c["cpu"]["cores"].get<int>() + 1; }));
  EXPECT_TRUE(changed([](Json& c) { c["numa"].push_back(Json{{"node", 9}, {"memory_bytes", 1ull << 34}}); }));
  EXPECT_TRUE(changed([](Json& c) {
    c["nics"].push_back(Json{{"name", "x0"}, {"virtual", false}, {"driver", "mlx5_core"}, {"speed_mbps", 100000}, {"mtu", 9000}});
  }));
  EXPECT_TRUE(changed([](Json& c) {
    c["gpus"] = Json::array({Json{{"name", "GPU X"}, {"compute_capability", "9.0"}, {"memory_bytes", 80ull << 30},
                                  {"pcie", {{"max_gen", 5}, {"max_width", 16}}}, {"nvlinks", 18}}});
  }));
  EXPECT_TRUE(changed([](Json& c) { c["versions"]["nccl"] = "9.9.9"; }));

  // A GPU whose clocks, temperature, power and current PCIe link change keeps the id.
  Json with_gpu = base;
  with_gpu["gpus"] = Json::array({Json{{"name", "GPU X"}, {"compute_capability", "9.0"}, {"memory_bytes", 80ull << 30},
                                       {"pcie", {{"current_gen", 5}, {"current_width", 16}, {"max_gen", 5}, {"max_width", 16}}},
                                       {"nvlinks", 18}, {"temperature_c", 40}, {"power_w", 100.0},
                                       {"clocks_mhz", {{"sm", 1980}}}}});
  const std::string gpu_id = fingerprint_id(with_gpu);
  Json hot = with_gpu;
  hot["gpus"][0]["temperature_c"] = 88;
  hot["gpus"][0]["power_w"] = 690.5;
  hot["gpus"][0]["clocks_mhz"]["sm"] = 1200;
  hot["gpus"][0]["pcie"]["current_gen"] = 1;
  hot["gpus"][0]["pcie"]["current_width"] = 4;
  EXPECT_EQ(fingerprint_id(hot), gpu_id);
  // Nor do the host name, the usable cores, notes or a virtual interface.
  Json other = base;
  other["host"] = "another-host";
  other["cpu"]["usable_cores"] = 1;
  other["notes"].push_back("x: y");
  other["nics"].push_back(Json{{"name", "veth9"}, {"virtual", true}, {"mtu", 1500}});
  EXPECT_EQ(fingerprint_id(other), id);
}

TEST(Probe, FingerprintOfAStoredProbe) {
  test::TempDir dir;
  Json j = probe_json();
  j["cpu"]["model"] = "Stored CPU";
  test::write_file(dir / "probe.json", j.dump());
  test::write_file(dir / "study.json", Json{{"fingerprint", j}}.dump());
  auto r = run_cli({"probe", "--fingerprint", (dir / "probe.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::lines_of(r.out).at(0), fingerprint_id(j));
  auto s = run_cli({"probe", "--fingerprint", dir.path().string()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(test::lines_of(s.out).at(0), fingerprint_id(j));
  auto missing = run_cli({"probe", "--fingerprint", (dir / "none.json").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
}

// The ids of the recorded probes, as written before the fingerprint's code last moved: every
// stored export carries one, and the loader compares it. Every recorded probe has a golden id.
TEST(Probe, RecordedProbesKeepTheirGoldenIds) {
  const std::filesystem::path dir = std::filesystem::path(ACCELTUNE_TEST_FIXTURES) / "probes";
  std::ifstream golden_in(dir / "fingerprint-ids.json");
  ASSERT_TRUE(golden_in.good());
  const Json golden = Json::parse(golden_in);
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name == "fingerprint-ids.json") continue;
    ASSERT_TRUE(golden.contains(name)) << name << " has no golden id in fingerprint-ids.json";
    std::ifstream in(entry.path());
    const Json probe = Json::parse(in);
    EXPECT_EQ(fingerprint_id(probe), golden[name].get<std::string>()) << name;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(Probe, HumanOutputShowsTheSections) {
  auto r = run_cli({"probe"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"fingerprint", "\nCPU\n", "\nMemory\n", "\nNUMA\n", "\nOS\n", "\nNICs\n", "\nRDMA\n", "\nGPUs\n",
                        "\nAffinity\n", "\nVersions\n"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

}  // namespace
}  // namespace acceltune
