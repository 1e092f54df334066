// acceltune probe: the hardware assessment and the fingerprint stored with every study.
#include <filesystem>
#include <fstream>

#include "tools/cli.hpp"
#include "probe/fingerprint.hpp"
#include "probe/links.hpp"

namespace acceltune::cli {
namespace {

std::string text_of(const Json& j, const std::string& none = "-") {
  if (j.is_null()) return none;
  if (j.is_string()) return j.get<std::string>().empty() ? none : j.get<std::string>();
  if (j.is_number_float()) return fmt::format("{:g}", j.get<double>());
  return j.dump();
}

Json get(const Json& j, const char* key) { return j.is_object() && j.contains(key) ? j[key] : Json(nullptr); }

std::string gib_text(const Json& bytes) {
  return bytes.is_number() ? fmt::format("{:.1f} GiB", bytes.get<double>() / (1024.0 * 1024 * 1024)) : "-";
}

void section(const char* title) { std::printf("\n%s\n", title); }
void row(const std::string& label, const std::string& value) {
  std::printf("  %-14s %s\n", label.c_str(), value.c_str());
}

void print_links(const Json& f) {
  section("Links and their ceilings (per direction; what a study measures is judged against these)");
  for (const auto& c : link_ceilings(f)) {
    if (c.gbps) {
      row(c.id, fmt::format("{}: {:.1f} GB/s", c.label, *c.gbps));
      std::printf("  %-14s   %s\n", "", c.basis.c_str());
    } else {
      row(c.id, c.label + ": " + (c.basis.rfind("no ceiling", 0) == 0 ? c.basis : "no ceiling: " + c.basis));
    }
    if (!c.state.empty()) std::printf("  %-14s   now: %s\n", "", c.state.c_str());
    if (!c.finding.empty()) std::printf("  %-14s   FINDING: %s\n", "", c.finding.c_str());
  }
  const std::string governor = text_of(get(get(f, "cpu"), "governor"), "");
  if (!governor.empty() && governor != "performance") {
    std::printf("  %-14s FINDING: the CPU frequency governor is '%s', not 'performance'\n", "cpu", governor.c_str());
  }
}

// The machine: host, CPU, memory, NUMA, OS.
void print_machine(const Json& f) {
  row("host", text_of(get(f, "host")));
  row("fingerprint", text_of(get(f, "id")));
  row("acceltune", fmt::format("{} ({})", text_of(get(f, "acceltune")), text_of(get(f, "compiler"))));

  const Json cpu = get(f, "cpu");
  section("CPU");
  row("model", text_of(get(cpu, "model")));
  row("layout", fmt::format("{} sockets, {} cores, {} logical ({} usable by this process), from {}",
                            text_of(get(cpu, "sockets")), text_of(get(cpu, "cores")), text_of(get(cpu, "logical_cores")),
                            text_of(get(cpu, "usable_cores")), text_of(get(cpu, "topology_source"))));
  if (get(cpu, "max_mhz").is_number()) row("max clock", fmt::format("{:.0f} MHz", get(cpu, "max_mhz").get<double>()));
  row("governor", text_of(get(cpu, "governor"), "- (no cpufreq)"));
  std::string flags;
  for (const auto& x : get(cpu, "flags").is_array() ? cpu["flags"] : Json::array()) {
    flags += (flags.empty() ? "" : " ") + text_of(x);
  }
  row("flags", flags.empty() ? "-" : flags);

  section("Memory");
  row("total", gib_text(get(f, "memory_bytes")));
  const Json ref = get(f, "memory_reference");
  if (ref.is_object()) {
    row("copy", fmt::format("{:.1f} GB/s best, {:.1f} median (measured: {} threads, {} MiB; bytes copied)",
                            get(ref, "copy_gbps").get<double>(), get(ref, "copy_gbps_median").get<double>(),
                            text_of(get(ref, "threads")), get(ref, "buffer_bytes").get<int64_t>() >> 20));
    for (const auto& n : get(ref, "per_numa").is_array() ? ref["per_numa"] : Json::array()) {
      row(fmt::format("  node {}", text_of(get(n, "node"))), fmt::format("{:.1f} GB/s", get(n, "copy_gbps").get<double>()));
    }
  }
  row("huge pages", text_of(get(f, "transparent_hugepages")));

  section("NUMA");
  const Json numa = get(f, "numa");
  if (!numa.is_array() || numa.empty()) row("(none)", "");
  for (const auto& n : numa.is_array() ? numa : Json::array()) {
    row(fmt::format("node {}", text_of(get(n, "node"))),
        fmt::format("{}, CPUs {}", gib_text(get(n, "memory_bytes")), text_of(get(n, "cpus"))));
  }

  const Json os = get(f, "os");
  section("OS");
  row("name", text_of(get(os, "name")));
  row("kernel", fmt::format("{} {}", text_of(get(os, "kernel")), text_of(get(os, "machine"))));
}

// The devices: NICs, RDMA and GPUs.
void print_devices(const Json& f) {
  section("NICs");
  const Json nics = get(f, "nics");
  if (!nics.is_array() || nics.empty()) row("(none)", "");
  for (const auto& n : nics.is_array() ? nics : Json::array()) {
    const Json speed = get(n, "speed_mbps");
    row(text_of(get(n, "name")),
        fmt::format("{}{}, {}, MTU {}, PCI {}, NUMA {}, {}", text_of(get(n, "driver")),
                    get(n, "virtual") == Json(true) ? " (virtual)" : "",
                    speed.is_number() ? fmt::format("{} Mb/s", speed.get<int64_t>()) : "speed -",
                    text_of(get(n, "mtu")), text_of(get(n, "pci_address")), text_of(get(n, "numa_node")),
                    text_of(get(n, "operstate"))));
  }

  section("RDMA");
  const Json rdma = get(f, "rdma");
  if (!rdma.is_array() || rdma.empty()) row("(none)", "");
  for (const auto& d : rdma.is_array() ? rdma : Json::array()) {
    row(text_of(get(d, "device")), fmt::format("firmware {}, PCI {}, NUMA {}", text_of(get(d, "firmware")),
                                               text_of(get(d, "pci_address")), text_of(get(d, "numa_node"))));
    for (const auto& p : get(d, "ports").is_array() ? d["ports"] : Json::array()) {
      row(fmt::format("  port {}", text_of(get(p, "port"))),
          fmt::format("{}, {}, active MTU {}, {} Gb/s", text_of(get(p, "state")), text_of(get(p, "link_layer")),
                      text_of(get(p, "active_mtu")), text_of(get(p, "rate_gbps"))));
    }
  }

  section("GPUs");
  const Json gpus = get(f, "gpus");
  if (!gpus.is_array() || gpus.empty()) row("(none)", "");
  for (const auto& g : gpus.is_array() ? gpus : Json::array()) {
    row(fmt::format("gpu {}", text_of(get(g, "index"))),
        fmt::format("{}, compute {}, {}, PCI {}, NUMA {}", text_of(get(g, "name")), text_of(get(g, "compute_capability")),
                    gib_text(get(g, "memory_bytes")), text_of(get(g, "pci_address")), text_of(get(g, "numa_node"))));
    const Json pcie = get(g, "pcie");
    if (pcie.is_object()) {
      row("  PCIe", fmt::format("gen {} x{} now, max gen {} x{}; NVLink links {}", text_of(get(pcie, "current_gen")),
                                text_of(get(pcie, "current_width")), text_of(get(pcie, "max_gen")),
                                text_of(get(pcie, "max_width")), text_of(get(g, "nvlinks"))));
      const Json clk = get(g, "clocks_mhz");
      row("  now", fmt::format("{} C, {} W, SM {} MHz, memory {} MHz", text_of(get(g, "temperature_c")),
                               text_of(get(g, "power_w")), text_of(get(clk, "sm")), text_of(get(clk, "memory"))));
    }
  }
}

void print_human(const Json& f) {
  print_machine(f);
  print_devices(f);

  section("Affinity");
  const Json aff = get(f, "affinity");
  if (!aff.is_array() || aff.empty()) row("(none)", "");
  for (const auto& a : aff.is_array() ? aff : Json::array()) {
    std::string near;
    for (const auto& n : get(a, "nics").is_array() ? a["nics"] : Json::array()) {
      near += fmt::format("{}{} {}", near.empty() ? "" : ", ", text_of(get(n, "name")), text_of(get(n, "path")));
    }
    row(fmt::format("gpu {}", text_of(get(a, "gpu"))),
        fmt::format("NUMA {}, CPUs {}; NICs: {}", text_of(get(a, "numa_node")), text_of(get(a, "cpus")),
                    near.empty() ? "-" : near));
  }

  section("Versions");
  const Json v = get(f, "versions");
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) row(k, text_of(x));
  }

  print_links(f);

  const Json notes = get(f, "notes");
  if (notes.is_array() && !notes.empty()) {
    section("Notes");
    for (const auto& n : notes) std::printf("  - %s\n", text_of(n).c_str());
  }
}

// A stored probe: a study directory, its study.json, or a probe's JSON.
Expected<Json> stored_probe(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  std::error_code ec;
  if (fs::is_directory(p, ec)) p /= "study.json";
  std::ifstream in(p);
  if (!in) return input_error("{}: cannot read it; pass a study directory, its study.json or a probe's JSON", p.string());
  const Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return input_error("{}: not a JSON object", p.string());
  const Json probe = j.contains("fingerprint") && j["fingerprint"].is_object() ? j["fingerprint"] : j;
  if (!probe.contains("cpu")) {
    return input_error("{}: holds no probe (no 'cpu', nor a 'fingerprint' object with one)", p.string());
  }
  return probe;
}

}  // namespace

void add_probe_command(CLI::App& app, CommandList& list) {
  auto as_json = std::make_shared<bool>(false);
  auto stored = std::make_shared<std::string>();
  auto links_of = std::make_shared<std::string>();
  auto* probe = app.add_subcommand("probe", "print the hardware assessment and the fingerprint stored with studies");
  probe->add_flag("--json", *as_json, "print JSON (as stored in every study)");
  probe->add_option("--fingerprint", *stored,
                    "print the fingerprint id of a stored probe instead: a study directory, its study.json, or the "
                    "output of probe --json");
  probe->add_option("--links", *links_of,
                    "print the links and their ceilings of a stored probe instead: a study directory, its study.json, "
                    "or the output of probe --json (another machine's, say)");
  probe->footer("Links: each with its ceiling per direction from this machine's own data (PCIe generation and width, "
                "NVLink links, NIC and RDMA rates, GPU memory by model, host memory by a short measured copy) and "
                "what the probe finds wrong with it. The fingerprint hashes the fields that decide performance (\"fingerprint_fields\" in --json), not "
                "clocks, temperatures, power, load or host names.");
  list.add(probe, [as_json, stored, links_of] {
    if (!stored->empty() || !links_of->empty()) {
      auto p = stored_probe(stored->empty() ? *links_of : *stored);
      if (!p) return fail(p.error());
      if (!stored->empty()) std::printf("%s\n", fingerprint_id(*p).c_str());
      else print_links(*p);
      return 0;
    }
    const Json f = probe_fingerprint();
    if (*as_json) std::printf("%s\n", f.dump(2).c_str());
    else print_human(f);
    return 0;
  });
}

}  // namespace acceltune::cli
