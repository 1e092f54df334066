// The host family: copies between host buffers, the memory reference of every node.
#include "tuner/family.hpp"

namespace acceltune {
namespace {

FamilyRole host_role(const NodeFacts&) {
  FamilyRole r;
  r.what = "host memory copies: the memory reference (no library reads their params)";
  r.studies.push_back(FamilyStudy{"host", "host-copy", nullptr, {}, 1, 10});
  return r;
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "host",
                   (::acceltune::FamilyInfo{.what = "copies between host buffers: threads, chunking, store method",
                                            .order = 10,
                                            .kernels = {"host-copy"},
                                            .spaces = {"host-copy"},
                                            .bringup = ::acceltune::host_role,
                                            .links = {"host-memory"}}))
