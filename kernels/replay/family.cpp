// Recorded landscapes and a kernel that fails on purpose: objectives for testing search, never
// part of bring-up. A replayed landscape's unit is the one its file names.
#include "tuner/family.hpp"
#include "tuner/space.hpp"

namespace acceltune {
namespace {

std::string replay_unit(const Space& space) {
  return space.extra().is_object() && space.kernel() != "fault" ? space.extra().value("unit", "objective") : "";
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "replay",
                   (::acceltune::FamilyInfo{.what = "recorded landscapes as objectives, and a kernel that fails on purpose",
                                            .order = 1000,
                                            .listed = false,
                                            .kernels = {"replay", "fault"},
                                            .unit = ::acceltune::replay_unit}))
