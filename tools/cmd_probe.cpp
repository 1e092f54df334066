// acceltune probe: the hardware and software fingerprint.
#include "tools/cli.hpp"
#include "tuner/fingerprint.hpp"

namespace acceltune::cli {
namespace {

int cmd_probe(bool as_json) {
  const Json f = probe_fingerprint();
  if (as_json) {
    std::printf("%s\n", f.dump(2).c_str());
    return 0;
  }
  std::printf("host        %s\n", f["host"].get<std::string>().c_str());
  std::printf("cpu         %s\n", f["cpu"]["model"].get<std::string>().c_str());
  std::printf("cores       %u logical, %d usable by this process\n", f["cpu"]["logical_cores"].get<unsigned>(),
              f["cpu"].value("usable_cores", 0));
  std::string flags;
  for (const auto& x : f["cpu"]["flags"]) flags += (flags.empty() ? "" : " ") + x.get<std::string>();
  std::printf("cpu flags   %s\n", flags.c_str());
  if (f["memory_bytes"].is_number()) {
    std::printf("memory      %.1f GiB\n", f["memory_bytes"].get<double>() / (1024.0 * 1024 * 1024));
  }
  std::printf("huge pages  %s\n", f["transparent_hugepages"].get<std::string>().c_str());
  std::printf("os          %s, %s %s\n", f["os"]["name"].get<std::string>().c_str(),
              f["os"]["kernel"].get<std::string>().c_str(), f["os"]["machine"].get<std::string>().c_str());
  std::printf("compiler    %s\n", f["compiler"].get<std::string>().c_str());
  std::printf("acceltune   %s\n", f["acceltune"].get<std::string>().c_str());
  std::printf("fingerprint %s\n", f["id"].get<std::string>().c_str());
  return 0;
}

}  // namespace

void add_probe_command(CLI::App& app, CommandList& list) {
  auto as_json = std::make_shared<bool>(false);
  auto* probe = app.add_subcommand("probe", "print the hardware and software fingerprint");
  probe->add_flag("--json", *as_json, "print JSON (as stored in every study)");
  list.add(probe, [as_json] { return cmd_probe(*as_json); });
}

}  // namespace acceltune::cli
