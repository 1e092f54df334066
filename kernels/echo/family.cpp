// echo's descriptor: a family used only by tests, hidden from listings and from bring-up unless
// --only names it. Its probe section (set only when ACCELTUNE_TEST_ECHO_PROBE is, so no real
// probe changes), the fingerprint field it adds and the rule of the link its kernel crosses
// register here too.
#include <cstdlib>

#include "probe/fingerprint.hpp"
#include "probe/links.hpp"
#include "tuner/family.hpp"

namespace acceltune {
namespace {

void echo_probe(Json& probe) {
  const char* wire = std::getenv("ACCELTUNE_TEST_ECHO_PROBE");
  if (wire) probe["echo"] = Json{{"wire_gbps", std::atof(wire)}};
}

Json echo_fingerprint(const Json& probe) { return field_of(probe, "echo"); }

std::vector<LinkCeiling> echo_ceilings(const Json& probe) {
  const Json wire = field_of(field_of(probe, "echo"), "wire_gbps");
  if (!wire.is_number()) return {};
  return {LinkCeiling{"echo-wire", "echo-wire", "the echo wire", wire.get<double>(), "the probe's echo section", "", ""}};
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "echo",
                   (::acceltune::FamilyInfo{
                       .what = "a test family: copies in chunks an environment variable sets",
                       .order = 900,
                       .listed = false,
                       .kernels = {"echo"},
                       .spaces = {"echo"},
                       .unit = [](const ::acceltune::Space&) { return std::string("MB/s"); },
                       .bringup = ::acceltune::always_runs("a test family: copies in chunks an environment variable sets",
                                                           {{"echo", "echo", nullptr, {}, 1, 2}}),
                       .env_prefixes = {"ACCELTUNE_ECHO_"},
                       .bundle_files = {{.name = "echo.env",
                                         .env_prefix = "ACCELTUNE_ECHO_",
                                         .about = "The test family's variables of acceltune.env.",
                                         .when_empty = "no echo variable: the copy keeps its own chunk"}},
                       .links = {"echo-wire"},
                       .far_ends = {"echo"},
                       .exports = {"echo-env"},
                       .fingerprint = {"echo"}}))
ACCELTUNE_REGISTER(::acceltune::ProbeSection, "echo",
                   (::acceltune::ProbeSection{"the test family's wire (only under ACCELTUNE_TEST_ECHO_PROBE)", 90,
                                              ::acceltune::echo_probe}))
ACCELTUNE_REGISTER(::acceltune::FingerprintField, "echo",
                   (::acceltune::FingerprintField{"the test family's wire", 90, ::acceltune::echo_fingerprint}))
ACCELTUNE_REGISTER(::acceltune::LinkRule, "echo-wire",
                   (::acceltune::LinkRule{
                       .description = "the test family's wire: its ceiling from the probe's echo section",
                       .order = 90,
                       .kinds = {"echo-wire"},
                       .ceilings = ::acceltune::echo_ceilings,
                       .fixed_id = "echo-wire"}))
